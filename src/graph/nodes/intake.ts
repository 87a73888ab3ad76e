import { Overwrite, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { emptyMetrics, TaskText } from "../../core/run.js";
import { emptyOutcome, type State, type Update, type RecalledMemories } from "../state.js";
import { trimConversation } from "../../agents/history.js";
import { CONVERSATION_LIMITS, emptyConversation } from "../../core/conversation.js";
import { errorMessage } from "../../core/errors.js";
import { MEMORY_LIMITS, plannerMemoryLine } from "../../core/memory.js";
import { describeSources, isUntrusted } from "../../core/provenance.js";
import { truncate } from "../../core/text.js";
import { countTextTokens } from "../../providers/token-count.js";
import { emit, type GraphDeps } from "../deps.js";

function isPlainRecord(item: unknown): item is Record<string, unknown> {
  return typeof item === "object" && item !== null && Object.getPrototypeOf(item) === Object.prototype;
}

/** Whether writing `next` (an `Overwrite`'s value too) over `current` changes nothing: the same value, or both an empty list or record. */
function unchanged(current: unknown, next: unknown): boolean {
  const value = next instanceof Overwrite ? (next.value as unknown) : next;
  if (current === value) return true;
  if (Array.isArray(current) && Array.isArray(value)) return current.length === 0 && value.length === 0;
  return isPlainRecord(current) && isPlainRecord(value) && Object.keys(current).length === 0 && Object.keys(value).length === 0;
}

/**
 * Validates and normalises the task, and resets everything a previous run on the same thread
 * left behind, so a thread can hold one run after another. Only what the reset changes is
 * written: on a new thread nearly every channel already holds its reset value, and each write is
 * a row of the checkpointer's (a new thread's first run wrote 34 here, 25 of them changing nothing).
 */
export function intake(state: State): Update {
  return changesOf(state, resetOf(state, TaskText.parse(state.task)));
}

/** The channels of `update` whose value it would change. */
function changesOf(state: State, update: Update): Update {
  const current = state as unknown as Record<string, unknown>;
  return Object.fromEntries(Object.entries(update).filter(([channel, value]) => !unchanged(current[channel], value))) as Update;
}

/** Everything a run starts from (whether or not a channel holds it already), with its validated task. */
function resetOf(state: State, task: string): Update {
  return {
    task,
    context: state.context ?? null,
    plan: [],
    planStatus: "none",
    planAttempts: 0,
    ...emptyOutcome(),
    planFeedback: [],
    planNotes: [],
    planAnswer: null,
    humanAnswers: new Overwrite([]),
    rejections: 0,
    results: new Overwrite({}),
    nodes: new Overwrite(["intake"]),
    toolCalls: new Overwrite([]),
    board: new Overwrite([]),
    metrics: new Overwrite({ ...emptyMetrics(), nodeVisits: 1 }),
  };
}


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
    const task = TaskText.parse(state.task);
    const update = changesOf(state, resetOf(state, task));
    const budget = state.settings.historyBudget ?? CONVERSATION_LIMITS.historyBudget;
    const trimmed = await trimConversation(state.conversation ?? emptyConversation(), budget);
    if (trimmed.conversation.turns.length > 0 || trimmed.dropped > 0) {
      emit(config, { type: "history-ready", turns: trimmed.conversation.turns.length, trimmed: trimmed.conversation.trimmed, tokens: trimmed.tokens, budget });
    }
    const recalled = await recallMemories(deps, state.settings.memoryNamespace, task, deps.recallBudget);
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
    return {
      ...update,
      ...(trimmed.conversation === state.conversation ? {} : { conversation: trimmed.conversation }),
      ...(unchanged(state.recalled, recalled) ? {} : { recalled }),
    };
  };
}
