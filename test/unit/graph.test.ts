import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, questionStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { eventsOf, runScripted, tempDir } from "../helpers.js";

describe("DAG scheduling", () => {
  it("runs independent subtasks concurrently and a dependent one after both, with their results as arguments", async () => {
    const { model, result, events } = await runScripted([
      planStep([
        subtask("s1", "research", "Look up the first figure"),
        subtask("s2", "research", "Look up the second figure"),
        subtask("s3", "execute", "Combine the figures", {
          dependsOn: ["s1", "s2"],
          args: { first: { ref: "s1", path: "$" }, second: { ref: "s2", path: "$.value" } },
        }),
      ]),
      finalStep("s1", "alpha", { delayMs: 250 }),
      finalStep("s2", '{"value": 42}', { delayMs: 250 }),
      finalStep("s3", "alpha and 42"),
      reviewStep(0.9),
      answerStep("The figures are alpha and 42."),
    ]);
    model.assertDone();
    expect(result.status).toBe("completed");
    expect(result.stopReason).toBe("completed");
    const [s1] = model.callsFor("research", "s1");
    const [s2] = model.callsFor("research", "s2");
    const [s3] = model.callsFor("execute", "s3");
    expect(s1 && s2 && s3).toBeTruthy();
    // s1 and s2 overlap in time; s3 starts only after both have finished.
    expect(s1!.startedAt).toBeLessThan(s2!.endedAt!);
    expect(s2!.startedAt).toBeLessThan(s1!.endedAt!);
    expect(s3!.startedAt).toBeGreaterThanOrEqual(Math.max(s1!.endedAt!, s2!.endedAt!));
    expect(s3!.lastMessage).toContain('"first":"alpha"');
    expect(s3!.lastMessage).toContain('"second":42');
    const starts = eventsOf(events, "subtask-start").map((event) => event.subtaskId);
    expect(starts.indexOf("s3")).toBe(2);
    expect(result.plan.map((view) => view.status)).toEqual(["done", "done", "done"]);
    expect(result.answer).toBe("The figures are alpha and 42.");
  });

  it("fails a subtask whose reference path matches nothing, naming the path and the shape found", async () => {
    const { model, result } = await runScripted([
      planStep([subtask("s1", "research", "Find it"), subtask("s2", "execute", "Use it", { dependsOn: ["s1"], args: { x: { ref: "s1", path: "$.missing" } } })]),
      finalStep("s1", '{"present": 1}'),
      reviewStep(0.8, {}, { contains: "$.missing" }),
      answerStep("partial"),
    ]);
    model.assertDone();
    const s2 = result.plan.find((view) => view.id === "s2");
    expect(s2?.status).toBe("failed");
    expect(s2?.error).toContain("$.missing");
    expect(s2?.error).toContain("object {present}");
  });
});

describe("plan validation and repair", () => {
  it("sends an invalid plan back with its errors and runs the repaired plan", async () => {
    const { model, result, events } = await runScripted([
      planStep([subtask("s1", "poet", "Write a poem")]),
      planStep(
        [subtask("s1", "execute", "A", { dependsOn: ["s2"] }), subtask("s2", "execute", "B", { dependsOn: ["s1"] })],
        { contains: 'unknown agent "poet"' },
      ),
      planStep([subtask("s1", "execute", "A")], { contains: "cycle" }),
      finalStep("s1", "ok"),
      reviewStep(1),
    ]);
    model.assertDone();
    expect(result.status).toBe("completed");
    // The repaired plan is one worker subtask: its result is the answer (the fast route).
    expect(result.answer).toBe("ok");
    const invalid = eventsOf(events, "plan-invalid");
    expect(invalid).toHaveLength(2);
    expect(invalid[0]?.errors.join(" ")).toContain('unknown agent "poet"');
    expect(invalid[1]?.errors.join(" ")).toMatch(/cycle: s\d → s\d → s\d/);
  });

  it("fails the run with a clear stop reason after two repairs", async () => {
    const tooMany = Array.from({ length: 51 }, (_, index) => subtask(`s${index + 1}`, "execute", `step ${index + 1}`));
    const { model, result } = await runScripted([
      planStep([subtask("s1", "execute", "A", { dependsOn: ["s9"] })]),
      planStep(tooMany),
      planStep([subtask("s1", "execute", "A", { args: { x: { ref: "s2", path: "$" } } }), subtask("s2", "execute", "B")]),
    ]);
    model.assertDone();
    expect(result.status).toBe("failed");
    expect(result.stopReason).toBe("failed");
    expect(result.error).toContain("did not produce a valid plan in 3 attempts");
    expect(result.error).toContain("not in its dependsOn");
    expect(model.callsFor("planner")).toHaveLength(3);
    expect(result.metrics.llmCalls).toBe(3);
  });
});

describe("critic loop", () => {
  it("re-runs only the subtasks the critic names, with its issues as feedback", async () => {
    const { model, result } = await runScripted([
      planStep([subtask("s1", "research", "First part"), subtask("s2", "research", "Second part")]),
      finalStep("s1", "one"),
      finalStep("s2", "too"),
      reviewStep(0.4, { issues: ["s2 misspells two"], redo: ["s2"] }),
      finalStep("s2", "two", { contains: "s2 misspells two" }),
      reviewStep(0.95),
      answerStep("one and two"),
    ]);
    model.assertDone();
    expect(model.callsFor("research", "s1")).toHaveLength(1);
    expect(model.callsFor("research", "s2")).toHaveLength(2);
    expect(result.metrics.reflectionCount).toBe(1);
    expect(result.trace.reviews.map((review) => review.passed)).toEqual([false, true]);
    expect(result.trace.reviews[0]?.confidence).toBe(0.4);
    expect(result.plan.find((view) => view.id === "s2")?.attempts).toBe(2);
    expect(result.stopReason).toBe("completed");
  });

  it("goes to the answer when a failing verdict names nothing to redo, and fails the run when nothing succeeded", async () => {
    const { model, result } = await runScripted([
      planStep([subtask("s1", "execute", "Divide by zero")]),
      finalStep("s1", "FAILED: division by zero"),
      reviewStep(0.2, { issues: ["s1 cannot succeed: division by zero"] }),
      answerStep("It cannot be done: division by zero.", { contains: "division by zero" }),
    ]);
    model.assertDone();
    expect(model.callsFor("execute", "s1")).toHaveLength(1);
    expect(result.status).toBe("failed");
    expect(result.stopReason).toBe("failed");
    expect(result.error).toBe("not done: s1 failed (division by zero)");
    expect(result.answer).toBe("It cannot be done: division by zero.");
    expect(result.trace.knownIssues).toEqual(["s1 cannot succeed: division by zero", "not done: s1 failed (division by zero)"]);
    expect(result.trace.unfinished).toEqual([{ id: "s1", label: "Divide by zero", status: "failed", failureKind: "error", error: "division by zero" }]);
  });

  it("weights the scores 0.4/0.3/0.2/0.1 and passes at 0.7", async () => {
    const { result } = await runScripted([
      planStep([subtask("s1", "research", "Only part")]),
      finalStep("s1", "done"),
      reviewStep({ accuracy: 1, completeness: 0.5, relevance: 0.5, logic: 0.5 }),
      answerStep("ok"),
    ]);
    // 0.4 + 0.15 + 0.1 + 0.05 = 0.70
    expect(result.trace.reviews[0]?.confidence).toBe(0.7);
    expect(result.trace.reviews[0]?.passed).toBe(true);
  });

  it("asks the planner again when the critic wants a new plan", async () => {
    // The critic's replan verdict and the synthesized answer are the subject: the whole pipeline.
    const { model, result } = await runScripted([
      planStep([subtask("s1", "research", "Wrong approach")]),
      finalStep("s1", "meh"),
      reviewStep(0.2, { issues: ["the approach cannot answer the question"], replan: true }),
      planStep([subtask("s1", "research", "Right approach")], { contains: "the approach cannot answer" }),
      finalStep("s1", "good", { contains: "Right approach" }),
      reviewStep(0.9),
      answerStep("good"),
    ], { review: "always" });
    model.assertDone();
    expect(result.status).toBe("completed");
    expect(result.plan.map((view) => view.label)).toEqual(["Right approach"]);
    expect(result.metrics.reflectionCount).toBe(1);
  });

  it("stops at max_iterations with the best answer and the known issues", async () => {
    const { model, result } = await runScripted(
      [
        planStep([subtask("s1", "research", "Hard part")]),
        finalStep("s1", "attempt", { times: 2 }),
        reviewStep(0.3, { issues: ["the figure is still unsourced"], redo: ["s1"] }, { times: 2 }),
        answerStep("Best effort: attempt.", { contains: "the figure is still unsourced" }),
      ],
      { maxIterations: 2 },
    );
    model.assertDone();
    // The review never passed: not completed, whatever the answer says (exit 1).
    expect(result.status).toBe("failed");
    expect(result.stopReason).toBe("max_iterations");
    expect(result.answer).toBe("Best effort: attempt.");
    expect(result.trace.knownIssues).toContain("the figure is still unsourced");
    expect(result.trace.reviews).toHaveLength(2);
  });
});

describe("workers", () => {
  it("stops a worker that calls the same tool with the same arguments three times, and the critic sees why", async () => {
    const { model, result } = await runScripted([
      planStep([subtask("s1", "execute", "Add one and one")]),
      toolStep("s1", "calculator", { expression: "1+1" }, { times: 3 }),
      reviewStep(0.75, { issues: ["s1 looped"] }, { contains: "calculator was called 3 times" }),
      answerStep("could not finish"),
    ]);
    model.assertDone();
    const s1 = result.plan[0];
    expect(s1?.status).toBe("failed");
    expect(s1?.error).toContain("calculator was called 3 times with the same arguments");
    expect(result.metrics.toolCalls).toBe(2);
  });

  it("marks a failing worker's subtask failed, skips what depends on it, and finishes the run", async () => {
    const { model, result } = await runScripted([
      planStep([
        subtask("s1", "research", "Fetch data"),
        subtask("s2", "execute", "Process data", { dependsOn: ["s1"] }),
        subtask("s3", "research", "Independent part"),
      ]),
      { role: "research", subtask: "s1", error: "provider exploded" },
      finalStep("s3", "fine"),
      reviewStep(0.75, { issues: ["s1 failed"] }, { contains: "provider exploded" }),
      answerStep("partial answer"),
    ]);
    model.assertDone();
    const byId = Object.fromEntries(result.plan.map((view) => [view.id, view]));
    expect(byId.s1?.status).toBe("failed");
    expect(byId.s1?.error).toContain("provider exploded");
    expect(byId.s2?.status).toBe("skipped");
    expect(byId.s3?.status).toBe("done");
    // The answer rests on s1 and s2 too: the run is not completed, and the trace says which did not finish.
    expect(result.status).toBe("failed");
    expect(result.stopReason).toBe("failed");
    expect(result.trace.unfinished.map((entry) => [entry.id, entry.status])).toEqual([
      ["s1", "failed"],
      ["s2", "skipped"],
    ]);
    expect(result.trace.reviews[0]?.passed).toBe(false);
  });

  it("bounds the tool loop at the step limit", async () => {
    const { result } = await runScripted(
      [
        planStep([subtask("s1", "execute", "Count")]),
        toolStep("s1", "calculator", { expression: "1" }),
        toolStep("s1", "calculator", { expression: "2" }),
        toolStep("s1", "calculator", { expression: "3" }),
        reviewStep(0.8),
        answerStep("gave up"),
      ],
      {},
      { maxWorkerSteps: 3 },
    );
    expect(result.plan[0]?.status).toBe("failed");
    expect(result.plan[0]?.error).toBe("stopped: no outcome after 3 steps");
  });

  it("treats a FAILED: answer as a failed subtask and a tool the agent lacks as a refused call", async () => {
    const { result, model } = await runScripted([
      planStep([subtask("s1", "research", "Write a file")]),
      toolStep("s1", "file_write", { path: "x.txt", content: "x" }),
      finalStep("s1", "FAILED: I am not allowed to write", { contains: "permission_denied" }),
      reviewStep(0.8),
      answerStep("no file"),
    ]);
    model.assertDone();
    expect(result.plan[0]?.status).toBe("failed");
    expect(result.plan[0]?.error).toBe("I am not allowed to write");
  });
});

describe("people in the loop", () => {
  async function engine(steps: Parameters<typeof runScripted>[0]) {
    const model = new ScriptedChatModel({ steps });
    const directory = tempDir();
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    return { model, troupe };
  }

  it("pauses for plan approval, and a rejection with feedback re-plans before the approved plan runs", async () => {
    const { model, troupe } = await engine([
      planStep([subtask("s1", "research", "Too broad")]),
      planStep([subtask("s1", "research", "Narrow")], { contains: "narrow it down" }),
      finalStep("s1", "narrow result"),
      reviewStep(1),
    ]);
    try {
      const first = await troupe.run({ task: "plan me", approvePlan: true, threadId: "approval-thread" });
      expect(first.status).toBe("interrupted");
      expect(first.interrupt?.kind).toBe("plan-approval");
      expect(first.plan.map((view) => view.label)).toEqual(["Too broad"]);
      expect(model.callsFor("research")).toHaveLength(0);
      const second = await troupe.resume("approval-thread", { decision: "reject", feedback: "narrow it down" });
      expect(second.status).toBe("interrupted");
      expect(second.plan.map((view) => view.label)).toEqual(["Narrow"]);
      const third = await troupe.resume("approval-thread", { decision: "approve" });
      expect(third.status).toBe("completed");
      // One worker subtask: its result is the answer (the fast route, no synthesizer).
      expect(third.answer).toBe("narrow result");
      model.assertDone();
      await expect(troupe.resume("approval-thread", { decision: "approve" })).rejects.toThrow(/already finished/);
    } finally {
      troupe.close();
    }
  });

  it("ends with stop reason rejected when the plan is rejected without feedback", async () => {
    const { model, troupe } = await engine([planStep([subtask("s1", "research", "Anything")])]);
    try {
      await troupe.run({ task: "plan me", approvePlan: true, threadId: "t-reject" });
      const result = await troupe.resume("t-reject", { decision: "reject" });
      expect(result.stopReason).toBe("rejected");
      expect(result.answer).toBeNull();
      model.assertDone();
    } finally {
      troupe.close();
    }
  });

  it("pauses for answer approval and rewrites the answer from the person's feedback", async () => {
    const { model, troupe } = await engine([
      planStep([subtask("s1", "research", "Part")]),
      finalStep("s1", "x"),
      reviewStep(1),
      answerStep("draft"),
      answerStep("shorter draft", { contains: "make it shorter" }),
    ]);
    try {
      // The synthesizer's draft and its rewrite from the person's feedback are the subject: the whole pipeline.
      const first = await troupe.run({ task: "answer me", approveAnswer: true, threadId: "t-answer", review: "always" });
      expect(first.interrupt).toEqual({ kind: "answer-approval", payload: { answer: "draft", format: "markdown" } });
      const second = await troupe.resume("t-answer", { decision: "reject", feedback: "make it shorter" });
      expect(second.interrupt?.payload.answer).toBe("shorter draft");
      const third = await troupe.resume("t-answer", { decision: "approve" });
      expect(third.status).toBe("completed");
      expect(third.answer).toBe("shorter draft");
      model.assertDone();
    } finally {
      troupe.close();
    }
  });

  it("puts the planner's question to a person and plans with the answer", async () => {
    const { model, troupe } = await engine([
      questionStep("Which city?"),
      planStep([subtask("s1", "research", "Weather in Oslo")], { contains: "Which city? → Oslo" }),
      finalStep("s1", "cold"),
      reviewStep(1),
    ]);
    try {
      const first = await troupe.run({ task: "what's the weather?", threadId: "t-question" });
      expect(first.interrupt).toEqual({ kind: "question", payload: { question: "Which city?" } });
      await expect(troupe.resume("t-question", { decision: "approve" })).rejects.toThrow(/--answer/);
      const second = await troupe.resume("t-question", { decision: "answer", answer: "Oslo" });
      // One worker subtask: its result is the answer (the fast route, no synthesizer).
      expect(second.answer).toBe("cold");
      model.assertDone();
    } finally {
      troupe.close();
    }
  });

  it("cancels a run on abort and resumes it later from its checkpoint without redoing finished work", async () => {
    const { model, troupe } = await engine([
      planStep([subtask("s1", "research", "Quick"), subtask("s2", "research", "Slow", { dependsOn: ["s1"] })]),
      finalStep("s1", "quick result"),
      finalStep("s2", "slow result", { delayMs: 5_000 }),
      finalStep("s2", "slow result, second try"),
      reviewStep(1),
      answerStep("both"),
    ]);
    try {
      const controller = new AbortController();
      const running = troupe.run({ task: "two steps", threadId: "t-cancel" }, {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === "subtask-start" && event.subtaskId === "s2") setTimeout(() => controller.abort(), 50);
        },
      });
      const cancelled = await running;
      expect(cancelled.status).toBe("cancelled");
      expect(cancelled.stopReason).toBe("cancelled");
      const resumed = await troupe.resume("t-cancel", undefined);
      expect(resumed.status).toBe("completed");
      expect(resumed.answer).toBe("both");
      expect(model.callsFor("research", "s1")).toHaveLength(1);
      model.assertDone();
    } finally {
      troupe.close();
    }
  });
});
