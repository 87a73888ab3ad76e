import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { planTask } from "../../src/providers/offline/planner-rules.js";
import { Troupe } from "../../src/runtime/engine.js";
import { tempDir } from "../helpers.js";

// Issue 25: on the offline default the README's task took 7 model calls and the issue's
// "compute 2^10 and 3^5, then add them and save the total" 11 — a worker's two calls for every
// calculation and write. The offline planner now plans them as direct steps, as the real planner
// is asked to: the tool runs with its arguments, the earlier values bound by reference.
const README_TASK = "compute 17% of 2,340 and save it to result.txt";
const COMBINATION_TASK = "compute 2^10 and 3^5, then add them and save the total to total.txt";

async function runOffline(task: string, review: "auto" | "always") {
  const directory = tempDir();
  const workspace = path.join(directory, "workspace");
  const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace, review });
  try {
    return { result: await troupe.run({ task }), workspace };
  } finally {
    troupe.close();
  }
}

describe("the offline planner plans direct steps", () => {
  it("plans the README's task as a direct calculation and a direct write of its number", () => {
    expect(planTask(README_TASK).subtasks.map(({ id, tool, tools, args, dependsOn }) => ({ id, tool, tools, args, dependsOn }))).toEqual([
      { id: "s1", tool: "calculator", tools: undefined, args: { expression: { value: "17% of 2,340" } }, dependsOn: [] },
      { id: "s2", tool: "file_write", tools: undefined, args: { path: { value: "result.txt" }, content: { ref: "s1", path: "$" } }, dependsOn: ["s1"] },
    ]);
  });

  it("runs the README's task in one model call: result.txt is 397.8, the critic skipped under review: auto, the plan's answer filled by code", async () => {
    const { result, workspace } = await runOffline(README_TASK, "auto");
    expect(result.status, result.error).toBe("completed");
    expect(readFileSync(path.join(workspace, "result.txt"), "utf8")).toBe("397.8");
    // In the offline synthesizer's words, as before: the clause, then what its step did.
    expect(result.answer).toBe("Answered offline by troupe's rule-based model (no language model was used).\n\n- Compute 17% of 2,340: 17% of 2,340 = 397.8\n- Save it to result.txt: wrote result.txt (5 bytes)");
    // The planner alone (was 7: planner, two workers' two calls each, critic, synthesizer; then 2 with the synthesizer).
    expect(result.metrics.llmCalls).toBe(1);
    expect(result.trace.answerSource).toMatchObject({ by: "template" });
    expect(result.trace.answerTemplate).toContain("{s1}");
    expect(result.trace.toolCalls.map((call) => call.tool)).toEqual(["calculator", "file_write"]);
    expect(result.trace.reviewDecisions?.[0]).toMatchObject({ review: "skipped" });
    // The write was checked against the referenced value, byte for byte.
    expect(result.plan.find((view) => view.id === "s2")?.artifacts?.[0]).toMatchObject({ path: "result.txt", source: { from: "s1 $", bytes: 5, identical: true, byReference: true } });
  });

  it("runs the issue's combination as a direct calculator over the two results bound as variables: 1267 in total.txt", async () => {
    const { result, workspace } = await runOffline(COMBINATION_TASK, "always");
    expect(result.status, result.error).toBe("completed");
    expect(readFileSync(path.join(workspace, "total.txt"), "utf8")).toBe("1267");
    expect(result.plan.map((view) => [view.id, view.tool, view.status])).toEqual([
      ["s1", "calculator", "done"],
      ["s2", "calculator", "done"],
      ["s3", "calculator", "done"],
      ["s4", "file_write", "done"],
    ]);
    // Planner, critic and synthesizer when the review always runs (was 11).
    expect(result.metrics.llmCalls).toBe(3);
    expect(result.trace.answerSource).toMatchObject({ by: "synthesizer", reason: "the plan's answer could not be used: review: always has the synthesizer write every answer" });
  });

  it("answers the combination in the task's words, with no internal variable, in one model call under review: auto", async () => {
    const { result } = await runOffline(COMBINATION_TASK, "auto");
    expect(result.status, result.error).toBe("completed");
    expect(result.metrics.llmCalls).toBe(1);
    expect(result.answer).toContain("1024 + 243 = 1267");
    expect(result.answer).not.toMatch(/\bx[a-z]\b/);
    // Its trace still says how each value was made: the calculator's summary has the values, not the names they were bound to.
    expect(result.plan.find((view) => view.id === "s3")?.summary).toBe("1024 + 243 = 1267");
  });
});
