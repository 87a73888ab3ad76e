import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { trimConversation } from "../../agents/history.js";
import { type Conversation, CONVERSATION_LIMITS, emptyConversation, type Turn, type TurnResult, withTurn } from "../../core/conversation.js";
import { errorMessage } from "../../core/errors.js";
import { describeShape } from "../../core/json-path.js";
import { MEMORY_LIMITS, plannerMemoryLine } from "../../core/memory.js";
import { describeSources, isUntrusted } from "../../core/provenance.js";
import { runStatusOf } from "../../core/run.js";
import { truncate } from "../../core/text.js";
import { countTextTokens } from "../../providers/token-count.js";
import { emit, type GraphDeps, planView } from "../deps.js";
import type { RecalledMemories, State, Update } from "../state.js";
import { workDone } from "../trace.js";
import { intake } from "./intake.js";
import { finalize } from "./review.js";

/** Characters of one recalled fact in the planner's prompt. */
const RECALLED_CHARS = 600;

/**
 * The long-term memories relevant to a task, best first, as many as fit `budget` tokens (at most
 * `recallMaxItems`). A store that cannot be read is reported, not taken for an empty one.
 */
export async function recallMemories(deps: GraphDeps, namespace: readonly string[] | null | undefined, task: string, budget: number = MEMORY_LIMITS.recallTokenBudget): Promise<RecalledMemories | null> {
  if (!deps.memory || !namespace || budget <= 0) return null;
  try {
    const found = await deps.memory.search(namespace, truncate(task, MEMORY_LIMITS.queryMaxChars), { limit: MEMORY_LIMITS.recallMaxItems });
    const items: RecalledMemories["items"] = [];
    let used = 0;
    for (const hit of found.items) {
      const text = truncate(hit.text, RECALLED_CHARS);
      const untrusted = isUntrusted(hit.label) ? describeSources(hit.label) : undefined;
      const item = { id: hit.id, text, score: hit.score, ...(untrusted !== undefined ? { untrusted } : {}) };
      const tokens = (await countTextTokens(plannerMemoryLine(item))) + 2;
      if (used + tokens > budget) break;
      used += tokens;
      items.push(item);
    }
    return { retrieval: found.retrieval, items, ...(found.note ? { note: found.note } : {}) };
  } catch (error) {
    return { retrieval: null, items: [], error: errorMessage(error) };
  }
}

/**
 * The first node: the task taken in and what the previous run on the thread left reset (intake),
 * then the thread's conversation trimmed to the run's history budget and the long-term memories
 * relevant to the task recalled — both for the planner, both kept small in the state.
 */
export function createIntakeNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const update = intake(state);
    const budget = state.settings.historyBudget ?? CONVERSATION_LIMITS.historyBudget;
    const trimmed = await trimConversation(state.conversation ?? emptyConversation(), budget);
    if (trimmed.conversation.turns.length > 0 || trimmed.dropped > 0) {
      emit(config, { type: "history-ready", turns: trimmed.conversation.turns.length, trimmed: trimmed.conversation.trimmed, tokens: trimmed.tokens, budget });
    }
    const recalled = await recallMemories(deps, state.settings.memoryNamespace, update.task as string, deps.recallBudget);
    // Said when there is something to say: facts recalled, or a store that could not be read.
    if (recalled && (recalled.items.length > 0 || recalled.error)) {
      emit(config, {
        type: "memory-recall",
        retrieval: recalled.retrieval,
        items: recalled.items.map(({ id, text, score, untrusted }) => ({ id, text: truncate(text, 200), score, ...(untrusted !== undefined ? { untrusted } : {}) })),
        ...(recalled.error ? { error: recalled.error } : {}),
        ...(recalled.note ? { note: recalled.note } : {}),
      });
    }
    return { ...update, conversation: trimmed.conversation, recalled };
  };
}

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
