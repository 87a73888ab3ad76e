import { describeSources, isUntrusted } from "../../core/provenance.js";
import { type GraphDeps, planView } from "../deps.js";
import { allSettled, statusOf } from "../subtask-status.js";
import type { State, Update } from "../state.js";
import { type Conversation, CONVERSATION_LIMITS, emptyConversation, type Turn, type TurnResult, withTurn } from "../../core/conversation.js";
import { describeShape } from "../../core/json-path.js";
import { runStatusOf } from "../../core/run.js";
import { workDone } from "../trace.js";

/** A short scalar as text, for the turn's results (`5`, `true`, a short string). */
function scalarText(value: unknown): string | undefined {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string" && value.length <= CONVERSATION_LIMITS.valueChars && !value.includes("\n")) return value;
  return undefined;
}

/** The run as a turn of its thread's conversation: task, outcome, answer, its results' handles and the files it wrote. */
async function turnOf(deps: GraphDeps, state: State, stopReason: State["stopReason"]): Promise<Turn> {
  const plan = planView(state);
  const done = plan.filter((subtask) => subtask.status === "done" && subtask.ref !== undefined).slice(-CONVERSATION_LIMITS.resultsPerTurn);
  const results: TurnResult[] = [];
  for (const subtask of done) {
    const result: TurnResult = { subtask: subtask.id, label: subtask.label, handle: subtask.ref as string, summary: subtask.summary ?? "", bytes: subtask.bytes ?? 0 };
    try {
      const value = await deps.stash.get(subtask.ref as string);
      result.shape = describeShape(value);
      const text = scalarText(value);
      if (text !== undefined) result.value = text;
    } catch {
      // The summary still says what it was.
    }
    if ((subtask.artifacts ?? []).some((artifact) => artifact.action === "written")) result.wrote = true;
    if (isUntrusted(subtask.provenance)) result.untrusted = describeSources(subtask.provenance);
    results.push(result);
  }
  const files: string[] = [];
  for (const subtask of plan) {
    if (subtask.status !== "done") continue;
    for (const artifact of subtask.artifacts ?? []) {
      const index = files.indexOf(artifact.path);
      if (index >= 0) files.splice(index, 1);
      if (artifact.action === "written") files.push(artifact.path);
    }
  }
  const status = stopReason ? runStatusOf(stopReason, workDone(state)) : "failed";
  // The synthesizer read every outcome: its answer is untrusted when any was.
  const answerUntrusted = plan.some((subtask) => isUntrusted(subtask.provenance));
  return { run: state.runId, task: state.task, status, answer: state.answer ?? null, ...(answerUntrusted ? { answerUntrusted } : {}), results, files, at: Date.now() };
}

/**
 * The last node: the stop reason set (finalize), and the run added to its thread's conversation,
 * so the next run on the thread sees it.
 */
export function createFinalizeNode(deps: GraphDeps) {
  return async (state: State): Promise<Update> => {
    const update = finalize(state);
    const conversation: Conversation = state.conversation ?? emptyConversation();
    const turn = await turnOf(deps, state, (update.stopReason as State["stopReason"] | undefined) ?? state.stopReason);
    return { ...update, conversation: withTurn(conversation, turn) };
  };
}


/**
 * The end of every run: the stop reason is set. A run is `completed` only when every subtask
 * succeeded and the last review passed; otherwise it `failed` — or was `rejected`, when a
 * person's rejection of a tool call is what left work undone — naming the subtasks that did
 * not finish.
 */
export function finalize(state: State): Update {
  const visit: Update = { finished: true, nodes: ["finalize"], metrics: { nodeVisits: 1 } };
  if (state.stopReason) return { ...visit, stopReason: state.stopReason };
  if (state.planStatus === "approved" && !allSettled(state.plan, state.results)) {
    return { ...visit, stopReason: "failed", failure: "no subtask can start: the dependencies cannot be satisfied" };
  }
  const unfinished = state.plan.filter((subtask) => statusOf(state.results, subtask.id) !== "done");
  const verdict = state.reviews.at(-1);
  if (unfinished.length === 0 && (verdict === undefined || verdict.passed)) return { ...visit, stopReason: "completed" };
  const rejected = unfinished.some((subtask) => state.results[subtask.id]?.failureKind === "rejected");
  const failure =
    unfinished.length > 0
      ? `not done: ${unfinished.map((subtask) => `${subtask.id} ${statusOf(state.results, subtask.id)}${state.results[subtask.id]?.error ? ` (${state.results[subtask.id]?.error})` : ""}`).join("; ")}`
      : `the review did not pass (confidence ${verdict?.confidence ?? 0})`;
  return { ...visit, stopReason: rejected ? "rejected" : "failed", failure };
}
