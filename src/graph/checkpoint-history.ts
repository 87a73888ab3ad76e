import type { StateSnapshot } from "@langchain/langgraph";
import { statusOf } from "./subtask-status.js";
import type { State } from "./state.js";

/** One checkpoint of a thread, as `troupe runs history` lists it. */
export interface HistoryEntry {
  checkpointId: string;
  parentId: string | null;
  /** When it was written (ISO 8601). */
  createdAt: string | null;
  step: number;
  /** LangGraph's source: input (a run's start), loop (a superstep), update or fork (written by updateState). */
  source: string;
  /** The run whose state it holds. */
  runId: string | null;
  /** What it followed: the node that ran, and what came of it. */
  after: string;
  /** Subtasks that ended in the superstep it closes (finished, failed or skipped). */
  ended: string[];
  /** The nodes that run next from it (none: the run had ended). */
  next: string[];
  /** What it waits for, when a node asked a person (interrupt kinds). */
  waiting: string[];
}

/** The verdict of a review in words. */
function reviewWords(state: State): string {
  const verdict = state.reviews?.at(-1);
  if (!verdict) return "review";
  const outcome = verdict.passed ? "passed" : verdict.replan ? "asked for a new plan" : verdict.redo.length > 0 ? `sent back ${verdict.redo.join(", ")}` : "did not pass";
  return `review round ${verdict.iteration}: ${outcome} (confidence ${verdict.confidence})`;
}

/** What a node's superstep came to, in words, from the state it left. */
function nodeWords(node: string, state: State, ended: string[]): string {
  const endedWords = ended.length > 0 ? ended.map((id) => `${id} ${statusOf(state.results ?? {}, id)}`).join(", ") : "";
  switch (node) {
    case "intake":
      return "intake: the task taken in";
    case "planner":
      return state.planStatus === "question" ? `plan: a question for a person` : `plan: ${state.plan?.length ?? 0} subtask(s)${endedWords ? `; ${endedWords}` : ""}`;
    case "approve_plan":
      return `plan approval: ${state.planStatus === "approved" ? "approved" : state.planStatus === "none" ? "rejected, to plan again" : state.planStatus}`;
    case "ask_human":
      return "a person answered the planner's question";
    case "execute":
      return endedWords ? `subtasks ended: ${endedWords}` : "execute: nothing ended";
    case "critic":
      return reviewWords(state);
    case "synthesizer":
      return "answer written";
    case "approve_answer":
      return `answer approval: ${state.answerStatus === "approved" ? "approved" : "sent back"}`;
    case "finalize":
      return `run ended: ${state.stopReason ?? "stopped"}`;
    default:
      return node;
  }
}

/**
 * The run each checkpoint belongs to, for snapshots given newest first. A run's first checkpoint
 * (source `input`) still holds the state the thread had before it — LangGraph keeps the input in
 * its start channel until the next superstep — so it belongs to the run of the checkpoint after it.
 */
export function checkpointOwners(newestFirst: readonly Pick<StateSnapshot, "values" | "metadata">[]): Array<string | null> {
  let next: string | null = null;
  return newestFirst.map((snapshot) => {
    const own = (snapshot.values as Partial<State>).runId || null;
    const owner = snapshot.metadata?.source === "input" ? next : own;
    if (owner !== null) next = owner;
    return owner;
  });
}

/**
 * A thread's checkpoints, oldest first, each described by what changed since the one before it
 * (getStateHistory gives them newest first, each a full snapshot of the state).
 */
export function describeHistory(snapshots: readonly StateSnapshot[]): HistoryEntry[] {
  const owners = checkpointOwners(snapshots).reverse();
  const ordered = [...snapshots].reverse();
  return ordered.map((snapshot, index) => {
    const state = snapshot.values as State;
    const previous = index > 0 ? ((ordered[index - 1] as StateSnapshot).values as State) : undefined;
    const sameRun = previous !== undefined && previous.runId === state.runId;
    const before = sameRun ? (previous?.results ?? {}) : {};
    const ended = (state.plan ?? [])
      .map((subtask) => subtask.id)
      .filter((id) => {
        const now = state.results?.[id];
        const then = before[id];
        return now !== undefined && now.status !== "pending" && now.status !== "running" && (then === undefined || then.status !== now.status || then.attempts !== now.attempts);
      });
    const nodes = state.nodes ?? [];
    const added = sameRun && nodes.length >= (previous?.nodes?.length ?? 0) ? nodes.slice(previous?.nodes?.length ?? 0) : nodes;
    // The nodes channel also names each subtask that ran (`subtask:s1`): the node is the last plain name.
    const graphNodes = added.filter((name) => !name.includes(":"));
    const source = String(snapshot.metadata?.source ?? "loop");
    let after: string;
    if (source === "input") after = "run started (its task waits in the start channel)";
    else if (source === "update" || source === "fork") after = `forked: the state a fork started from${state.plan?.length ? ` (${Object.values(state.results ?? {}).filter((result) => result.status === "done").length} finished subtask(s) kept)` : ""}`;
    else if (graphNodes.length > 0) after = nodeWords(graphNodes.at(-1) as string, state, ended);
    else after = ended.length > 0 ? nodeWords("execute", state, ended) : "superstep";
    const waiting = snapshot.tasks.flatMap((task) => (task.interrupts ?? []).map((pending) => String((pending.value as { kind?: string } | undefined)?.kind ?? "interrupt")));
    return {
      checkpointId: String(snapshot.config.configurable?.checkpoint_id ?? ""),
      parentId: (snapshot.parentConfig?.configurable?.checkpoint_id as string | undefined) ?? null,
      createdAt: snapshot.createdAt ?? null,
      step: Number(snapshot.metadata?.step ?? -1),
      source,
      runId: owners[index] ?? null,
      after,
      ended,
      next: [...snapshot.next],
      waiting,
    };
  });
}
