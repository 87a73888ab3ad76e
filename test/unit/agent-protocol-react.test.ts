import { JSDOM } from "jsdom";
import { describe, expect, it } from "vitest";
import { listen } from "../protocol-helpers.js";
import { makeApp } from "../server-helpers.js";

// LangGraph's React hook, useStream (what Agent Chat UI is built on), driving troupe for real: a
// document from jsdom for React to render into, the app listening on loopback, the hook's own
// Client and fetch. The server runs in this Node process (a DOM test environment would replace
// Node's URL and fetch, which troupe's store and the SDK need), so only the globals React wants
// are set.

const dom = new JSDOM("<!doctype html><html><body></body></html>", { url: "http://localhost/" });
Object.assign(globalThis, { window: dom.window, document: dom.window.document, IS_REACT_ACT_ENVIRONMENT: true });
Object.defineProperty(globalThis, "navigator", { value: dom.window.navigator, configurable: true });
const { act, renderHook, waitFor } = await import("@testing-library/react");
const { useStream } = await import("@langchain/langgraph-sdk/react");

type Message = { type: string; content: unknown; id?: string };
type Interrupt = { id: string; value: { kind: string; action_requests: Array<{ name: string }>; review_configs: Array<{ allowed_decisions: string[] }> } };
type Stream = {
  messages: Message[];
  values: Record<string, unknown>;
  interrupt: Interrupt | undefined;
  isLoading: boolean;
  error: unknown;
  submit: (values: unknown, options?: unknown) => Promise<void>;
};

const WAIT = { timeout: 30_000 };

describe("useStream (LangGraph's React hook) on troupe", () => {
  it("submits a task, shows its messages and plan, stops at the plan's approval as an interrupt, and resumes it", async () => {
    const app = await makeApp();
    const base = await listen(app);
    const seen: { threadId?: string } = {};
    // As Agent Chat UI configures it: the thread's history is fetched, so messages and branches come from the server.
    const { result } = renderHook(() => useStream({ apiUrl: `${base}/langgraph`, assistantId: "troupe", messagesKey: "messages", fetchStateHistory: true, onThreadId: (id: string) => (seen.threadId = id) } as never) as unknown as Stream);
    expect(result.current.messages).toEqual([]);

    await act(async () => {
      void result.current.submit({ messages: [{ type: "human", content: [{ type: "text", text: "list the files and compute 2^10" }] }] }, { context: { approve_plan: true }, streamMode: ["values"] });
    });
    await waitFor(() => expect(result.current.interrupt?.value.kind).toBe("plan-approval"), WAIT);
    const asked = result.current.interrupt as Interrupt;
    expect(asked.value.action_requests).toEqual([expect.objectContaining({ name: "approve_plan" })]);
    expect(asked.value.review_configs[0]?.allowed_decisions).toEqual(["approve", "edit", "reject"]);
    expect(result.current.messages).toEqual([expect.objectContaining({ type: "human", content: "list the files and compute 2^10" })]);
    expect((result.current.values.plan as Array<{ id: string; status: string }>).map((subtask) => subtask.id)).toEqual(["s1", "s2"]);
    expect(seen.threadId).toBeDefined();
    await waitFor(() => expect(result.current.isLoading).toBe(false), WAIT);

    // Approve as Agent Chat UI's review form does: a Command resume with LangChain's decisions.
    await act(async () => {
      void result.current.submit({}, { command: { resume: { decisions: [{ type: "approve" }] } } });
    });
    await waitFor(() => expect(result.current.messages.map((message) => message.type)).toEqual(["human", "ai"]), WAIT);
    await waitFor(() => expect(result.current.isLoading).toBe(false), WAIT);
    expect(String(result.current.messages[1]?.content)).toContain("2^10 = 1024");
    expect(result.current.interrupt).toBeUndefined();
    expect(result.current.error).toBeUndefined();
    expect((result.current.values.plan as Array<{ status: string }>).map((subtask) => subtask.status)).toEqual(["done", "done"]);
    const run = (await app.troupe.store.runs.list({ threadId: seen.threadId as string }))[0];
    expect(run).toMatchObject({ status: "completed", task: "list the files and compute 2^10" });

    // A second message continues the conversation on the same thread.
    await act(async () => {
      void result.current.submit({ messages: [{ type: "human", content: "compute 2+3" }] });
    });
    await waitFor(() => expect(result.current.messages.map((message) => message.type)).toEqual(["human", "ai", "human", "ai"]), WAIT);
    await waitFor(() => expect(result.current.isLoading).toBe(false), WAIT);
    expect(String(result.current.messages[3]?.content)).toContain("2+3 = 5");
    expect(await app.troupe.store.runs.list({ threadId: seen.threadId as string })).toHaveLength(2);
  });
});
