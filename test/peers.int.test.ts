import { describe, expect, it, vi } from "vitest";
import { FRAMEWORKS, TROUPE_WORKERS } from "../bench/peers/frameworks.js";
import { NO_MODEL_LATENCY } from "../bench/peers/meter.js";
import { writeCompactPlan, writePlan } from "../bench/peers/plan-writer.js";
import { runTask } from "../bench/peers/run-task.js";
import { progressOf, reportedObservations, reportLine } from "../bench/peers/solution.js";
import { GROUPS, PEER_TASKS } from "../bench/peers/tasks.js";
import { NO_LATENCIES } from "../bench/peers/world.js";
import { jsonSchemaOf } from "../src/agents/structured-output.js";
import { readCompactPlan } from "../src/core/plan-compact.js";
import { planReadContext } from "../src/core/plan-read.js";
import { planWireSchema, readPlanAnswer } from "../src/core/plan-wire.js";
import { countTextTokens } from "../src/providers/token-count.js";

// The peers benchmark's instrument: the oracle model driving each framework gives the checked
// answer on every task. A peer that fails here is a defect of the benchmark to fix, never a figure.

const options = { latencies: NO_LATENCIES, modelLatency: NO_MODEL_LATENCY };
// troupe as the bench runs it: its default review mode and route (vitest.config.ts pins the older tests to review: always).
vi.stubEnv("TROUPE_REVIEW", "");

describe("the peers benchmark's tasks", () => {
  it("has at least 12 tasks, at least three in each of the four groups", () => {
    expect(PEER_TASKS.length).toBeGreaterThanOrEqual(12);
    for (const group of GROUPS) expect(PEER_TASKS.filter((task) => task.group === group).length).toBeGreaterThanOrEqual(3);
    expect(PEER_TASKS.find((task) => task.group === "map")?.steps[0]?.inputs.item).toMatchObject({ value: expect.arrayContaining([expect.any(String)]) });
  });

  it("checks the answer against the world, so a wrong figure or a missing file fails", async () => {
    const task = PEER_TASKS.find((candidate) => candidate.id === "simple-save");
    expect(await task?.check("17% of 2,340 is 397.8.", "/nonexistent")).toMatch(/result.txt was not written/);
    expect(await task?.check("It is 398.", "/nonexistent")).toMatch(/does not say 397.8/);
  });

  it("knows only what it sees: a result missing from the conversation is asked for again", () => {
    const task = PEER_TASKS.find((candidate) => candidate.id === "chain-rate");
    if (!task) throw new Error("no chain-rate task");
    expect(progressOf(task, []).ready.map((call) => call.tool)).toEqual(["lookup_supplier"]);
    const supplier = { tool: "lookup_supplier", args: { item: "widget" }, result: { item: "widget", supplier: "Nordvik Industri" } };
    const reported = reportedObservations(`Results:\n${reportLine(supplier)}`);
    expect(progressOf(task, reported).ready).toMatchObject([{ tool: "lookup_headquarters", args: { supplier: "Nordvik Industri" } }]);
    // A result passed on wrong (another supplier) leads the oracle down the wrong path, as it would a model.
    expect(progressOf(task, [{ ...supplier, result: { supplier: "Elsewhere" } }]).ready).toMatchObject([{ args: { supplier: "Elsewhere" } }]);
  });

  it("writes troupe's plan on the wire the planner asks for, which troupe reads back: the compact lines, the JSON wire, or the internal shape", () => {
    const tools = ["lookup_price", "calculate", "write_file"];
    const schema = planWireSchema({ agents: ["lookup", "math", "files"], tools, maxSubtasks: 50 });
    const context = planReadContext([{ name: "lookup", tools: ["lookup_price"] }, { name: "math", tools: ["calculate"] }, { name: "files", tools: ["write_file"] }], tools);
    for (const task of PEER_TASKS.filter((candidate) => candidate.steps.every((step) => tools.includes(step.tool)))) {
      for (const style of ["workers", "offered"] as const) {
        const reads = { json: readPlanAnswer(writePlan(task, jsonSchemaOf(schema), style), schema, context), compact: readCompactPlan(writeCompactPlan(task, style), context) };
        for (const [wire, read] of Object.entries(reads)) {
          expect(read.success, `${task.id} ${style} ${wire}: ${read.success ? "" : read.error}`).toBe(true);
          if (!read.success) continue;
          expect(read.data.subtasks.map((subtask) => subtask.id)).toEqual(task.steps.map((step) => step.id));
          // What troupe's plan offers (tools, references with a format, the answer) the oracle plans: every step here a direct one.
          expect(read.data.subtasks.filter((subtask) => subtask.tool === undefined).map((subtask) => subtask.id), `${task.id} ${style} ${wire}`).toEqual(style === "offered" ? [] : task.steps.map((step) => step.id));
          expect(read.data.answer, `${task.id} ${style} ${wire}`).toBe(style === "offered" ? task.template : undefined);
        }
      }
      // Without a schema, troupe's internal shape.
      expect(readPlanAnswer(writePlan(task, undefined, "workers"), schema, context).success).toBe(true);
    }
  });

  it("plans a step in a fraction of the JSON wire's tokens on the compact wire", async () => {
    const task = PEER_TASKS.find((candidate) => candidate.id === "parallel-average");
    if (!task) throw new Error("no parallel-average task");
    const schema = planWireSchema({ agents: ["lookup", "math", "files"], tools: ["lookup_price", "calculate", "write_file"], maxSubtasks: 50 });
    const compact = await countTextTokens(writeCompactPlan(task, "offered"));
    const json = await countTextTokens(JSON.stringify(writePlan(task, jsonSchemaOf(schema), "offered")));
    expect(compact / task.steps.length).toBeLessThan(25);
    // About half the lean JSON wire's (217 against 418 tokens; the JSON plan before issue 34 took about 80 a step).
    expect(compact).toBeLessThan(json * 0.6);
  });
});

describe("the README's task through the oracle", () => {
  it("takes troupe one model call (its plan), where a ReAct agent needs more", async () => {
    const task = PEER_TASKS.find((candidate) => candidate.id === "simple-save");
    const troupe = FRAMEWORKS.find((framework) => framework.name === "troupe");
    const react = FRAMEWORKS.find((framework) => framework.name === "react-agent");
    if (!task || !troupe || !react) throw new Error("no simple-save task, troupe or ReAct agent");
    const ours = await runTask(troupe, task, options);
    expect(ours.correct, ours.problem).toBe(true);
    expect(ours.modelCalls).toBe(1);
    expect(Object.keys(ours.byRole)).toEqual(["planner"]);
    const theirs = await runTask(react, task, options);
    expect(theirs.correct, theirs.problem).toBe(true);
    expect(theirs.modelCalls).toBeGreaterThanOrEqual(2);
  });
});

for (const framework of [...FRAMEWORKS, TROUPE_WORKERS]) {
  describe(`${framework.name} driven by the oracle`, () => {
    it("answers every task right", async () => {
      const wrong: string[] = [];
      for (const task of PEER_TASKS) {
        const run = await runTask(framework, task, options);
        if (!run.correct) wrong.push(`${task.id}: ${run.problem}`);
        expect(run.modelCalls, task.id).toBeGreaterThan(0);
        expect(run.promptTokens, task.id).toBeGreaterThan(run.modelCalls * 10);
      }
      expect(wrong).toEqual([]);
    });
  });
}
