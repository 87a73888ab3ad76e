import { describe, expect, it } from "vitest";
import { envFor, fakeOpenAI, runOnProvider } from "../provider-helpers.js";

type WireMessage = { role: string; content: unknown };

// Issue 22's cache-stable prefix, kept by issue 25's smaller prompts: every call a worker agent
// makes in a run starts with the same bytes — its tool definitions, then its system prompt — and
// what differs per subtask comes after, in the subtask message.
describe("a worker's prompt prefix", () => {
  it("is byte for byte the same across the subtasks of one agent, the subtask itself only after it", async () => {
    const openai = await fakeOpenAI();
    // Two worker subtasks of the execute agent (a write of two values through a template is a worker's; the calculations are direct steps).
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai:gpt-4o-mini" }), { task: "compute 2^10 and 3^5, then save both to a.txt and save both to b.txt" });
    expect(result.status, result.error).toBe("completed");
    const requests = openai.requestsFor("execute");
    const subtasks = new Set(requests.map((request) => JSON.stringify((request.body.messages as WireMessage[])[1]?.content)));
    expect(subtasks.size).toBeGreaterThanOrEqual(2);
    const prefix = (request: (typeof requests)[number]) => JSON.stringify([request.body.tools, (request.body.messages as WireMessage[])[0]]);
    expect(new Set(requests.map(prefix)).size).toBe(1);
    // The definitions say each thing once: submit_result's statuses in its description, not again in the system prompt.
    const system = String((requests[0]?.body.messages as WireMessage[])[0]?.content);
    expect(system).toMatch(/^You are the troupe execute worker\./);
    expect(system).not.toMatch(/unable/);
  });
});
