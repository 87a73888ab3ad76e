/**
 * What holding effects costs streamed planning: a plan of 8 subtasks streamed over 400 ms, each
 * a worker that thinks (one model call, 50 ms) and then writes a file — or, beside it, reads one.
 * Subtasks start as they arrive either way; a write waits until the plan has passed the checks
 * that can still fail it, a read does not. On main the writes went out as early as the reads do.
 */
import path from "node:path";
import { writeFileSync } from "node:fs";
import type { StoredEvent } from "../src/core/events.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { ScriptedChatModel, type ScriptStep } from "../src/testing/scripted-chat-model.js";
import { SCRIPTED_USAGE } from "./scripts.js";
import { formatNumber as number, formatTable, type Summary, summarize, withTempDir } from "./support.js";

const SUBTASKS = 8;
const PIECES = 40;

export interface StreamedHoldsReport {
  planMs: number;
  /** Planner call start → first subtask start, → first tool call of that kind done, → last subtask end. */
  writes: { firstStartMs: Summary; firstEffectMs: Summary; lastEndMs: Summary };
  reads: { firstStartMs: Summary; firstEffectMs: Summary; lastEndMs: Summary };
}

async function measure(kind: "write" | "read", planMs: number, runs: number): Promise<StreamedHoldsReport["writes"]> {
  const plan = Array.from({ length: SUBTASKS }, (_, index) => subtask(`s${index + 1}`, "execute", `${kind === "write" ? "Write" : "Read"} file ${index + 1}`, kind === "write" ? { writes: [`out${index + 1}.txt`] } : { reads: [`in${index + 1}.txt`] }));
  const extra = { times: runs + 1, usage: { ...SCRIPTED_USAGE } };
  const planning = planStep(plan, extra);
  const characters = JSON.stringify(planning.toolCalls?.[0]?.args ?? {}).length;
  const steps: ScriptStep[] = [
    { ...planning, streamPieces: Math.ceil(characters / PIECES), pieceDelayMs: planMs / PIECES },
    ...plan.flatMap((item, index) => [
      toolStep(item.id, kind === "write" ? "file_write" : "file_read", kind === "write" ? { path: `out${index + 1}.txt`, content: "x" } : { path: `in${index + 1}.txt` }, { ...extra, delayMs: 50, contains: "## Subtask" }),
      finalStep(item.id, "done", { ...extra, contains: kind === "write" ? "wrote" : "bytes" }),
    ]),
    reviewStep(0.9, {}, extra),
    answerStep("Done.", extra),
  ];
  return withTempDir("troupe-bench-holds-", async (directory) => {
    const model = new ScriptedChatModel({ steps, streaming: true });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    for (let index = 1; index <= SUBTASKS; index += 1) writeFileSync(path.join(troupe.workspace, `in${index}.txt`), "x");
    const firstStart: number[] = [];
    const firstEffect: number[] = [];
    const lastEnd: number[] = [];
    try {
      for (let round = 0; round <= runs; round += 1) {
        const events: StoredEvent[] = [];
        const firstCall = model.calls.length;
        await troupe.run({ task: `${kind} the files` }, { onEvent: (event) => events.push(event) });
        const planner = model.calls.slice(firstCall).find((call) => call.role === "planner");
        if (round === 0 || !planner) continue;
        const at = (type: string): number[] => events.filter((event) => event.type === type).map((event) => event.at - planner.startedAt);
        firstStart.push(Math.min(...at("subtask-start")));
        firstEffect.push(Math.min(...events.filter((event) => event.type === "tool-call" && event.ok).map((event) => event.at - planner.startedAt)));
        lastEnd.push(Math.max(...at("subtask-end")));
      }
    } finally {
      troupe.close();
    }
    return { firstStartMs: summarize(firstStart), firstEffectMs: summarize(firstEffect), lastEndMs: summarize(lastEnd) };
  });
}

export async function measureStreamedHolds(options: { planMs: number; runs: number }): Promise<StreamedHoldsReport> {
  return { planMs: options.planMs, writes: await measure("write", options.planMs, options.runs), reads: await measure("read", options.planMs, options.runs) };
}

export function streamedHoldsSection(report: StreamedHoldsReport): string {
  const row = (label: string, figures: StreamedHoldsReport["writes"]): string[] => [label, number(figures.firstStartMs.median), number(figures.firstEffectMs.median), number(figures.lastEndMs.median)];
  return [
    `22. Held effects in streamed planning: ${SUBTASKS} subtasks streamed over ${report.planMs} ms, each a worker that thinks 50 ms and then calls one tool (medians, ms from the planner's call).`,
    "",
    formatTable(["subtasks", "first start", "first tool call done", "last subtask end"], [row("write a file (held until the plan stands)", report.writes), row("read a file (not held)", report.reads)]),
    "",
    "    the writes' first tool call waits for the end of the plan; the reads show when it went out before (main held nothing).",
  ].join("\n");
}
