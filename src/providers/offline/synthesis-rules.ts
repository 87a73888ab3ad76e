import { parseClause } from "./intents.js";
import type { OutcomeLine } from "./review-rules.js";
import { NEEDS_MODEL } from "./worker-rules.js";

export const OFFLINE_NOTICE = "Answered offline by troupe's rule-based model (no language model was used).";

function indent(text: string): string {
  return text.includes("\n") ? `\n${text.split("\n").map((line) => `    ${line}`).join("\n")}` : ` ${text}`;
}

/** What a mapped count's figure counts, from its label ("Count the lines of each file in data" → lines). */
function countedUnit(label: string): string | undefined {
  const intent = parseClause(label, { path: "item.txt" });
  return intent.kind === "count" ? intent.unit : undefined;
}

/** An item that succeeded, named by its input: "data/a.txt: 3 lines", "scripts/a.py: 42". */
function itemLine(input: string, output: string | undefined, unit: string | undefined): string {
  if (output === undefined || output === input) return input;
  const figure = unit !== undefined && /^\d+$/.test(output) ? `${output} ${output === "1" ? unit.replace(/s$/, "") : unit}` : output;
  return `${input}: ${figure}`;
}

/** A mapped subtask: how many items succeeded, then each listed item's output or error. */
function itemLines(outcome: OutcomeLine): string[] {
  const items = outcome.items;
  if (!items) return [];
  const lines = [`- ${outcome.label}: ${items.succeeded} of ${items.total} item${items.total === 1 ? "" : "s"} succeeded${items.failed > 0 ? `, ${items.failed} failed` : ""}`];
  const unit = countedUnit(outcome.label);
  for (const item of items.listed ?? []) {
    lines.push(item.status === "success" ? `    - ${itemLine(item.input, item.output, unit)}` : `    - ${item.input}: failed — ${item.error ?? "no reason given"}`);
  }
  if ((items.notListed ?? 0) > 0) lines.push(`    - … ${items.notListed} more not shown`);
  return lines;
}

/** The offline synthesizer: the outcome of every subtask, plainly, and what it could not do. */
export function synthesize(task: string, outcomes: OutcomeLine[], issues: string[]): string {
  const lines = [OFFLINE_NOTICE, ""];
  const unresolved = outcomes.filter((outcome) => outcome.failureKind === "unable" && (outcome.error ?? "").includes(NEEDS_MODEL));
  const solved = outcomes.filter((outcome) => outcome.status === "done" && !unresolved.includes(outcome));
  if (solved.length === 0 && unresolved.length > 0) {
    lines.push(
      `This task needs a language model, which the offline provider does not have: "${task.length > 160 ? `${task.slice(0, 159)}…` : task}".`,
      "Set TROUPE_PROVIDER (openai, anthropic, ollama or openai-compatible) to have it planned and answered for real.",
      "The offline model can compute arithmetic and percentages (also on earlier results: then ×2, add them, the difference), read, write, list, copy, move, rename and delete files in the workspace, save several results to a file, count a file's lines, words or characters, validate JSON and answer questions in words over a JSON file's records, run code in the sandbox (also every script of a folder) and search the knowledge folder.",
      "",
      "Plan it would follow:",
      ...outcomes.map((outcome) => `- ${outcome.id} (${outcome.agent}): ${outcome.label}`),
    );
  } else {
    for (const outcome of outcomes) {
      if (outcome.items && (outcome.status === "done" || outcome.status === "failed")) lines.push(...itemLines(outcome));
      else if (outcome.status === "done") lines.push(`- ${outcome.label}:${indent(outcome.summary ?? "done")}`);
      else if (outcome.status === "failed") lines.push(`- ${outcome.label}: failed — ${outcome.error ?? "no reason given"}`);
      else lines.push(`- ${outcome.label}: ${outcome.status}`);
    }
  }
  if (issues.length > 0) lines.push("", "Known issues:", ...issues.map((issue) => `- ${issue}`));
  return lines.join("\n");
}
