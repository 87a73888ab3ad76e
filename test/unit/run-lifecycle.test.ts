import path from "node:path";
import type { RunnableConfig } from "@langchain/core/runnables";
import { afterEach, describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { tempDir } from "../helpers.js";

const open: Troupe[] = [];
afterEach(() => {
  for (const troupe of open.splice(0)) troupe.close();
});

async function engine(model: ScriptedChatModel): Promise<Troupe> {
  const directory = tempDir();
  const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
  open.push(troupe);
  return troupe;
}

/** Counts the checkpoint reads of one thread (the checkpointer's getTuple, which `getState` and a stream's start both use). */
function countReads(troupe: Troupe, threadId: string): { count: number } {
  const reads = { count: 0 };
  const checkpointer = troupe.store.checkpointer;
  const getTuple = checkpointer.getTuple.bind(checkpointer);
  checkpointer.getTuple = (config: RunnableConfig) => {
    if (config.configurable?.thread_id === threadId) reads.count += 1;
    return getTuple(config);
  };
  return reads;
}

describe("the run lifecycle", () => {
  it("a resume reads the checkpoint once before it drives, and its budget carries on from what the run had used", async () => {
    // One worker subtask: its result is the answer, so no synthesizer call.
    const model = new ScriptedChatModel({ steps: [planStep([subtask("s1", "research", "Look it up")]), finalStep("s1", "found"), reviewStep(1)] });
    const troupe = await engine(model);
    const paused = await troupe.run({ task: "look it up", threadId: "t-resume", approvePlan: true, budget: { maxModelCalls: 3 } });
    expect(paused.status).toBe("interrupted");
    const reads = countReads(troupe, "t-resume");
    const resumed = await troupe.resume("t-resume", { decision: "approve" });
    // One read to judge the resume (and to carry the budget on), one by LangGraph as the stream starts;
    // the run ended cleanly, so its last values describe it without another.
    expect(reads.count).toBe(2);
    expect(resumed.status).toBe("completed");
    // The planner's call before the pause counts: 1 + worker + critic = the budget's 3, none refused.
    expect(resumed.metrics.llmCalls).toBe(3);
    expect(resumed.answer).toBe("found");
    model.assertDone();
  });

  it("the budget ledger reaches the graph through its config: a resumed run stops at the limit its earlier calls used up", async () => {
    const model = new ScriptedChatModel({ steps: [planStep([subtask("s1", "research", "Look it up")]), finalStep("s1", "found"), reviewStep(1), answerStep("the answer")] });
    const troupe = await engine(model);
    await troupe.run({ task: "look it up", threadId: "t-budget", approvePlan: true, budget: { maxModelCalls: 2 } });
    const resumed = await troupe.resume("t-budget", { decision: "approve" });
    expect(resumed.stopReason).toBe("budget_exhausted");
    expect(resumed.trace.budget).toEqual({ limit: "maxModelCalls", max: 2, used: 2 });
    expect(model.callsFor("critic")).toHaveLength(0);
  });
});
