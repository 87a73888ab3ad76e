import { Overwrite } from "@langchain/langgraph";
import { InputError } from "../core/errors.js";
import { type PlannedSubtask, type SubtaskArg, SubtaskArg as SubtaskArgSchema, type SubtaskResult } from "../core/plan.js";
import { emptyMetrics } from "../core/run.js";
import { stableStringify } from "../core/text.js";
import { dependentsOf } from "./subtask-status.js";
import { emptyOutcome, type State, type Update } from "./state.js";

/** What a fork changes of the run it starts from. */
export interface ForkChanges {
  /** The subtask to run again, with everything downstream of it. */
  from?: string;
  /** A plan to run instead (already checked); its subtasks whose definition changed run again. */
  plan?: PlannedSubtask[];
  /** Arguments to replace, by subtask: a subtask whose arguments change runs again. */
  args?: Record<string, Record<string, unknown>>;
}

/** The state a fork starts from, and which subtasks keep their results. */
export interface ForkedState {
  values: Update;
  /** Subtasks whose finished result the fork keeps (copied to its own run in the stash). */
  keep: string[];
  /** Subtasks the fork runs (again). */
  rerun: string[];
  /** The plan the fork runs. */
  plan: PlannedSubtask[];
}

/** An argument as given to `--args`: `{ value }` or `{ ref, path }` as in a plan, anything else a literal. */
function argOf(value: unknown): SubtaskArg {
  const parsed = SubtaskArgSchema.safeParse(value);
  return parsed.success ? parsed.data : { value };
}

/** The plan with `--args` applied: each named subtask's arguments replaced (the others kept). */
export function withArgs(plan: readonly PlannedSubtask[], args: ForkChanges["args"]): PlannedSubtask[] {
  if (!args) return [...plan];
  for (const id of Object.keys(args)) {
    if (!plan.some((subtask) => subtask.id === id)) throw new InputError("unknown_subtask", `--args names ${id}, which is not a subtask of the plan (${plan.map((subtask) => subtask.id).join(", ")})`, { subtaskId: id });
  }
  return plan.map((subtask) => {
    const given = args[subtask.id];
    if (!given) return subtask;
    return { ...subtask, args: { ...subtask.args, ...Object.fromEntries(Object.entries(given).map(([name, value]) => [name, argOf(value)])) } };
  });
}

/**
 * The state a fork of a run starts from, given the state at the checkpoint it forks (its last
 * one, for a fork from a subtask). With nothing to run again (a checkpoint, no edits) it is that
 * state as it was, under the new run. Otherwise the subtasks to run again are the one named, the
 * ones the new plan or arguments change, and everything downstream of them; every other subtask
 * that finished keeps its result (no model or tool call is repeated for it), and the review and
 * the answer start over. `ref` moves a kept result's stash handle to the new run's.
 */
export function forkedState(state: State, changes: ForkChanges, target: { runId: string; startedAt: number; ref: (ref: string) => string; plan?: PlannedSubtask[] }): ForkedState {
  const original = state.plan ?? [];
  const plan = target.plan ?? original;
  if (changes.from !== undefined && !plan.some((subtask) => subtask.id === changes.from)) {
    throw new InputError("unknown_subtask", `the run has no subtask ${changes.from} to fork from (its plan has ${original.map((subtask) => subtask.id).join(", ") || "no subtasks yet"})`, { subtaskId: changes.from });
  }
  const before = new Map(original.map((subtask) => [subtask.id, stableStringify(subtask)]));
  const changed = plan.filter((subtask) => before.get(subtask.id) !== stableStringify(subtask)).map((subtask) => subtask.id);
  const seeds = [...(changes.from !== undefined ? [changes.from] : []), ...changed];
  const moved = (result: SubtaskResult): SubtaskResult => (result.ref !== undefined ? { ...result, ref: target.ref(result.ref) } : result);
  const common: Update = { runId: target.runId, startedAt: target.startedAt, metrics: new Overwrite(emptyMetrics()) };
  if (seeds.length === 0 && target.plan === undefined) {
    // A checkpoint as it was: everything after it runs as it would have.
    const results = Object.fromEntries(Object.entries(state.results ?? {}).map(([id, result]) => [id, moved(result)]));
    const keep = Object.entries(results).filter(([, result]) => result.status === "done").map(([id]) => id);
    return { values: { ...state, ...common, results: new Overwrite(results) }, keep, rerun: plan.filter((subtask) => !keep.includes(subtask.id)).map((subtask) => subtask.id), plan };
  }
  const affected = new Set([...seeds, ...dependentsOf(plan, seeds)]);
  const keep = plan.filter((subtask) => !affected.has(subtask.id) && state.results?.[subtask.id]?.status === "done").map((subtask) => subtask.id);
  const kept = new Set(keep);
  const results: Record<string, SubtaskResult> = Object.fromEntries(keep.map((id) => [id, moved(state.results[id] as SubtaskResult)]));
  const values: Update = {
    ...state,
    ...common,
    plan,
    ...emptyOutcome(),
    planStatus: "approved",
    results: new Overwrite(results),
    nodes: new Overwrite([]),
    // What the kept subtasks did stays in the trace; what runs again is done anew.
    toolCalls: new Overwrite((state.toolCalls ?? []).filter((call) => call.subtaskId !== undefined && kept.has(call.subtaskId))),
    board: new Overwrite((state.board ?? []).filter((message) => kept.has(message.from))),
  };
  return { values, keep, rerun: plan.filter((subtask) => !kept.has(subtask.id)).map((subtask) => subtask.id), plan };
}
