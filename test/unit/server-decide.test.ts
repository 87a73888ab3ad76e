import { describe, expect, it } from "vitest";
import { STRUCTURED_OUTPUT } from "../../src/core/prompt-protocol.js";
import type { DecisionResult } from "../../src/core/vote.js";
import type { ScriptStep } from "../../src/testing/scripted-chat-model.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { envelope, makeApp, waitFor } from "../server-helpers.js";

const vote = (index: number, of: number, choice: string): ScriptStep => ({
  role: "voter",
  contains: `You are voter ${index} of ${of};`,
  toolCalls: [{ name: STRUCTURED_OUTPUT.vote, args: { choice, confidence: 0.8, reason: `${choice} is better` } }],
});

describe("POST /api/v1/decide", () => {
  it("answers with the decision, the consensus, each vote and the counts", async () => {
    const { app } = await makeApp({ steps: [vote(1, 3, "blue"), vote(2, 3, "blue"), vote(3, 3, "green")] });
    const response = await app.inject({ method: "POST", url: "/api/v1/decide", payload: { question: "Which colour for the button?", options: ["blue", "green"], voters: 3, threshold: 0.6 } });
    expect(response.statusCode).toBe(200);
    const { code, data } = envelope<DecisionResult & { usage: { llmCalls: number } }>(response);
    expect(code).toBe("ok");
    expect(data).toMatchObject({ decision: "blue", reached: true, outcome: "decided", counts: { blue: 2, green: 1 }, usage: { llmCalls: 3 } });
    expect(data.votes.map((item) => [item.voter, item.choice, item.confidence, item.reason])).toEqual([
      ["voter-1", "blue", 0.8, "blue is better"],
      ["voter-2", "blue", 0.8, "blue is better"],
      ["voter-3", "green", 0.8, "green is better"],
    ]);
  });

  it("reports a tie as no decision with 200, and refuses a bad body with 400 naming the field", async () => {
    const { app } = await makeApp({ steps: [vote(1, 2, "a"), vote(2, 2, "b")] });
    const tie = envelope<DecisionResult>(await app.inject({ method: "POST", url: "/api/v1/decide", payload: { question: "a or b?", options: ["a", "b"], voters: 2 } }));
    expect(tie.data).toMatchObject({ decision: null, reached: false, outcome: "tie" });
    const bad = await app.inject({ method: "POST", url: "/api/v1/decide", payload: { question: "a or b?", options: ["a"] } });
    expect(bad.statusCode).toBe(400);
    expect(envelope(bad)).toMatchObject({ data: { field: "options" } });
    const unknown = await app.inject({ method: "POST", url: "/api/v1/decide", payload: { question: "a or b?", options: ["a", "b"], voters: ["nobody"] } });
    expect(unknown.statusCode).toBe(400);
    expect(envelope(unknown).message).toMatch(/voter "nobody" is neither an agent/);
  });
});

describe("POST /api/v1/execute with reviewers", () => {
  it("runs the task with a critic panel of that size", async () => {
    const reviewer = (index: number): ScriptStep => ({ ...reviewStep(0.9), contains: `You are reviewer ${index} of 2 on a panel.` });
    const { app, model } = await makeApp({ steps: [planStep([subtask("s1", "execute", "Say hi", { tools: [] })]), finalStep("s1", "hi"), reviewer(1), reviewer(2), answerStep("hi")] });
    const created = envelope<{ task_id: string }>(await app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "say hi", reviewers: 2 } }));
    const done = await waitFor(async () => {
      const view = envelope<{ status: string }>(await app.inject({ method: "GET", url: `/api/v1/tasks/${created.data.task_id}` }));
      return view.data.status === "completed" ? view : undefined;
    }, "the task to complete");
    expect(done.data.status).toBe("completed");
    expect(model?.callsFor("critic")).toHaveLength(2);
    const refused = await app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "say hi", reviewers: 9 } });
    expect(refused.statusCode).toBe(400);
  });
});
