import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events.js";
import type { PlannedSubtask } from "../../src/core/plan.js";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { eventsOf, tempDir } from "../helpers.js";

// Streamed planning starts work from a plan that is not yet whole. On main, a plan of 120
// subtasks was refused only once complete — after 357 file_write calls had run over three
// attempts, leaving 119 files — because nothing was checked on the prefix.

/** The planner's step, its plan streamed in pieces of 200 characters, `delay` ms apart. */
const streamed = (subtasks: PlannedSubtask[], delay = 2): ScriptStep => ({ ...planStep(subtasks), streamPieces: 200, pieceDelayMs: delay });

const writes = (count: number, from = 1): PlannedSubtask[] =>
  Array.from({ length: count }, (_, index) =>
    subtask(`w${index + from}`, "execute", `Write file ${index + from}`, { tool: "file_write", args: { path: { value: `out/f${index + from}.txt` }, content: { value: `file ${index + from}` } } }),
  );

async function engine(steps: ScriptStep[]) {
  const directory = tempDir();
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
  return { model, troupe, workspace: troupe.workspace };
}

const filesIn = (folder: string): string[] => {
  try {
    return readdirSync(folder);
  } catch {
    return [];
  }
};

describe("a streamed plan is checked on every prefix", () => {
  it("stops a plan at its 51st subtask: the stream is cut, nothing it started leaves an effect, over every attempt", async () => {
    const plan = writes(120);
    const { model, troupe, workspace } = await engine([streamed(plan), streamed(plan), streamed(plan)]);
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "write 120 files" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("failed");
      const invalid = eventsOf(events, "plan-invalid");
      expect(invalid).toHaveLength(3);
      for (const event of invalid) expect(event.errors).toEqual(["the plan has more than 50 subtasks (stopped at subtask w51, number 51); at most 50 are allowed"]);
      // At most the first 50 of each attempt were handed over; none wrote anything.
      expect(eventsOf(events, "subtask-planned").length).toBeLessThanOrEqual(150);
      expect(filesIn(path.join(workspace, "out"))).toEqual([]);
      const rows = await troupe.store.audit.list({ tool: "file_write", limit: 1_000 });
      expect(rows.filter((row) => row.status === "ok")).toEqual([]);
      expect(new Set(rows.map((row) => row.errorCode))).toEqual(new Set(rows.length > 0 ? ["plan_dropped"] : []));
      // The stream was cut at the limit: each planner call sent about 51 of 120 subtasks' pieces.
      for (const call of model.callsFor("planner")) expect(call.piecesSent).toBeLessThan((call.piecesTotal ?? 0) * 0.5);
    } finally {
      troupe.close();
    }
  });

  it("holds the writes of early subtasks until the plan stands: a later subtask naming an unknown agent refuses the plan before any file is written", async () => {
    const broken = [...writes(3), subtask("x", "wizard", "Cast a spell")];
    const repaired = writes(3);
    // The repaired plan's writes are verified direct tool results: no critic, the synthesizer words the answer.
    const { model, troupe, workspace } = await engine([streamed(broken, 20), streamed(repaired, 5), answerStep("three files")]);
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "write three files" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(eventsOf(events, "plan-invalid")[0]?.errors).toEqual([expect.stringMatching(/^subtask x: unknown agent "wizard"/)]);
      // The first plan's steps started (and were held), then were dropped: only the repaired plan wrote.
      const rows = await troupe.store.audit.list({ tool: "file_write", limit: 100 });
      expect(rows.filter((row) => row.status === "ok")).toHaveLength(3);
      expect(rows.filter((row) => row.errorCode === "plan_dropped").length).toBeGreaterThan(0);
      expect(filesIn(path.join(workspace, "out")).sort()).toEqual(["f1.txt", "f2.txt", "f3.txt"]);
    } finally {
      troupe.close();
    }
  });

  it("refuses a plan whose workers need more model calls than the budget leaves, as it streams", async () => {
    // Each waits for r4, which the check refuses: none of them starts a model call.
    const many = ["r1", "r2", "r3", "r4"].map((id) => subtask(id, "research", `Look up ${id}`, id === "r4" ? {} : { dependsOn: ["r4"] }));
    const few = [subtask("r1", "research", "Look it all up")];
    const { model, troupe } = await engine([streamed(many), planStep(few), finalStep("r1", "found"), reviewStep(0.9), answerStep("found")]);
    const events: StoredEvent[] = [];
    try {
      await troupe.run({ task: "look things up", budget: { maxModelCalls: 4 } }, { onEvent: (event) => events.push(event) });
      // 4 calls: the planner's, then 3 left — the 4th worker subtask is one too many.
      expect(eventsOf(events, "plan-invalid")[0]?.errors).toEqual([expect.stringMatching(/^the plan's workers need at least 4 model calls so far .* the run's budget leaves 3/)]);
      expect(model.callsFor("planner")).toHaveLength(2);
      expect(model.callsFor("research").map((call) => call.subtask)).toEqual(["r1"]);
      expect(eventsOf(events, "subtask-start").map((event) => event.label)).toEqual(["Look it all up"]);
    } finally {
      troupe.close();
    }
  });
});
