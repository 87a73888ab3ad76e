import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { normaliseRequest, requestHash, stableText } from "./cassette.js";

const tools = [{ type: "function", function: { name: "code_run", description: "Run code", parameters: { type: "object", properties: {} } } }];

/** A worker's second request, as two runs of the same case make it: only what varies between runs differs. */
function workerRequest(run: { callId: string; durationMs: number; workspace: string; runId: string }) {
  return [
    new SystemMessage("You are the troupe execute worker."),
    new HumanMessage("## Task\nrun `1+1`\n\n## Subtask\ns1 (execute): Run `1+1`"),
    new AIMessage({ content: "", id: `chatcmpl-${run.runId}`, tool_calls: [{ id: run.callId, name: "code_run", args: { language: "javascript", code: "1+1" }, type: "tool_call" }] }),
    new ToolMessage({
      tool_call_id: run.callId,
      name: "code_run",
      content: JSON.stringify({ ok: true, value: { result: 2, durationMs: run.durationMs, cwd: run.workspace }, summary: `javascript ran in ${run.durationMs} ms → 2`, $stash: "results.1" }),
    }),
  ];
}

describe("the request hash", () => {
  it("is the same for two runs of a case: ids, durations, its folders and LangGraph's runtime options are left out", () => {
    const first = normaliseRequest("openai:gpt-4o-mini", workerRequest({ callId: "call_1_1", durationMs: 220, workspace: "/tmp/a/evals/e1/case", runId: "run-1" }), { tools, signal: new AbortController().signal, promptIndex: 0, writer: () => {} }, ["/tmp/a/evals/e1/case"]);
    const second = normaliseRequest("openai:gpt-4o-mini", workerRequest({ callId: "call_9_1", durationMs: 164, workspace: "/tmp/b/evals/e2/case", runId: "run-2" }), { tools, executionInfo: { checkpoint: "x" } }, ["/tmp/b/evals/e2/case"]);
    expect(requestHash(first)).toMatch(/^[0-9a-f]{16}$/);
    expect(requestHash(second)).toBe(requestHash(first));
    expect(JSON.stringify(first)).toContain("<workspace>");
    expect(JSON.stringify(first)).not.toContain("call_1_1");
  });

  it("differs when what shapes the answer differs: the model, a message, a tool call's arguments, the tools offered, the response format", () => {
    const base = { callId: "c", durationMs: 1, workspace: "/w", runId: "r" };
    const hash = (model: string, messages = workerRequest(base), options: Record<string, unknown> = { tools }) => requestHash(normaliseRequest(model, messages, options, ["/w"]));
    const reference = hash("openai:gpt-4o-mini");
    expect(hash("openai:gpt-4.1")).not.toBe(reference);
    const changed = workerRequest(base);
    changed[1] = new HumanMessage("## Task\nrun `1+2`");
    expect(hash("openai:gpt-4o-mini", changed)).not.toBe(reference);
    const otherArgs = workerRequest(base);
    otherArgs[2] = new AIMessage({ content: "", tool_calls: [{ id: "c", name: "code_run", args: { language: "javascript", code: "1+2" }, type: "tool_call" }] });
    expect(hash("openai:gpt-4o-mini", otherArgs)).not.toBe(reference);
    expect(hash("openai:gpt-4o-mini", workerRequest(base), {})).not.toBe(reference);
    expect(hash("openai:gpt-4o-mini", workerRequest(base), { tools, response_format: { type: "json_schema" } })).not.toBe(reference);
  });

  it("replaces timestamps, UUIDs and durations in text", () => {
    expect(stableText('at 2026-11-23T19:30:07.357Z for 0b8c0f54-1c5e-4d7a-9d2f-3f0e6b1a2c3d took 37 ms, "durationMs": 12, "at":1763926207357', [])).toBe(
      'at <time> for <uuid> took <n> ms, "durationMs": 0, "at":0',
    );
  });
});
