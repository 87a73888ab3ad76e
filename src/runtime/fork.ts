import type { StateSnapshot } from "@langchain/langgraph";
import { z } from "zod";
import { ConflictError, InputError, NotFoundError } from "../core/errors.js";
import { PlannedSubtask } from "../core/plan.js";
import { parseStashRef, stashRef } from "../core/stash.js";
import type { TroupeGraph } from "../graph/build-graph.js";
import type { GraphDeps } from "../graph/deps.js";
import { type ForkedState, forkedState, withArgs } from "../graph/fork-state.js";
import { describeHistory, type HistoryEntry } from "../graph/checkpoint-history.js";
import { checkPlan } from "../core/plan-check.js";
import { refuseEvalCase } from "./eval-case.js";
import type { State } from "../graph/state.js";
import type { RunRecord, Store } from "../store/index.js";
import type { ForkOrigin } from "../store/runs/contract.js";

/** What `troupe runs fork` and `POST /tasks/:id/fork` ask for. */
export const ForkRequest = z
  .object({
    /** A subtask of the run (it and everything downstream run again), or a checkpoint of its thread (everything after it runs again). */
    from: z.string().min(1).max(200),
    /** A plan to run instead: subtasks whose definition changed run again, with everything downstream. */
    plan: z.array(z.unknown()).min(1).max(50).optional(),
    /** Arguments to replace, by subtask id (`{ "s2": { "x": 5 } }`): those subtasks run again. */
    args: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
    /** The new thread (default: a new id); it must hold nothing yet. */
    threadId: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,128}$/, { error: "a thread id is 1-128 letters, digits, '.', '_', ':' or '-'" })
      .optional(),
  })
  .strict();
export type ForkRequest = z.infer<typeof ForkRequest>;

/** A fork request checked; a bad one is an InputError naming the field. */
export function parseForkRequest(input: unknown): ForkRequest {
  const parsed = ForkRequest.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError("invalid_fork", `${issue?.path.join(".") || "fork"}: ${issue?.message ?? "invalid"}`, { path: issue?.path.join(".") });
  }
  return parsed.data;
}

/** The node a fork's state is written as: every node but finalize routes on by the coordinator, which reads the state alone. */
export const FORK_AS_NODE = "execute";

/** A thread's checkpoints, oldest first, described (`troupe runs history`). */
export async function threadHistory(graph: TroupeGraph, threadId: string, limit = 500): Promise<HistoryEntry[]> {
  const snapshots: StateSnapshot[] = [];
  for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: threadId } }, { limit })) snapshots.push(snapshot);
  return describeHistory(snapshots);
}

/** The run's snapshot a fork starts from: the checkpoint named, or the run's last. */
async function baseSnapshot(graph: TroupeGraph, record: RunRecord, from: string): Promise<{ snapshot: StateSnapshot; checkpoint: boolean }> {
  let latest: StateSnapshot | undefined;
  for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: record.threadId } })) {
    const state = snapshot.values as Partial<State>;
    const id = snapshot.config.configurable?.checkpoint_id as string | undefined;
    if (id === from) {
      if (state.runId !== record.id) {
        throw new InputError("checkpoint_of_another_run", `checkpoint ${from} holds run ${state.runId || "(none)"} of thread ${record.threadId}, not run ${record.id}; fork that run instead`, { checkpointId: from });
      }
      if (snapshot.next.length === 0) throw new InputError("checkpoint_at_end", `checkpoint ${from} is where run ${record.id} ended; nothing follows it to run again (fork from an earlier one)`, { checkpointId: from });
      if (snapshot.metadata?.source === "input") {
        throw new InputError("checkpoint_at_start", `checkpoint ${from} is where run ${record.id} started, before anything ran: run its task again instead (troupe run)`, { checkpointId: from });
      }
      return { snapshot, checkpoint: true };
    }
    if (latest === undefined && state.runId === record.id) latest = snapshot;
  }
  if (!latest) throw new NotFoundError("no_checkpoints", `run ${record.id} has no checkpoint left to fork from (its thread ${record.threadId} was collected, or it never started)`, { runId: record.id });
  const plan = (latest.values as State).plan ?? [];
  if (!plan.some((subtask) => subtask.id === from)) {
    throw new NotFoundError("unknown_fork_point", `${from} is neither a subtask of run ${record.id} (${plan.map((subtask) => subtask.id).join(", ") || "no plan"}) nor a checkpoint of its thread (troupe runs history ${record.threadId})`, { from });
  }
  return { snapshot: latest, checkpoint: false };
}

/** A fork, ready to write: the new thread's first state and where it came from. */
export interface PreparedFork {
  runId: string;
  /** The new thread's key, and its name as its owner gives it (core/thread-key.ts). */
  threadId: string;
  threadName: string;
  origin: ForkOrigin;
  state: ForkedState;
}

/**
 * Works out a fork of `record` on LangGraph's checkpoint history: the snapshot it starts from
 * (`getStateHistory`), the state the new thread starts with (the results it keeps, the subtasks
 * it runs again, an edited plan checked as the planner's would be). Nothing is written.
 */
export async function prepareFork(
  parts: { store: Store; graph: TroupeGraph; deps: GraphDeps },
  record: RunRecord,
  request: ForkRequest,
  ids: { runId: string; threadId: string; threadName: string },
): Promise<PreparedFork> {
  if (record.status === "queued" || record.status === "running") {
    throw new ConflictError("run_active", `run ${record.id} is ${record.status}; fork it once it has stopped (or cancel it)`, { runId: record.id, status: record.status });
  }
  refuseEvalCase(record, "fork");
  const existing = await parts.store.runs.latestForThread(ids.threadId);
  const seeded = (await parts.graph.getState({ configurable: { thread_id: ids.threadId } })).values as Partial<State>;
  if (existing || seeded.runId) throw new ConflictError("thread_in_use", `thread ${ids.threadName} already holds runs; a fork starts a thread of its own`, { threadId: ids.threadName });
  const { snapshot, checkpoint } = await baseSnapshot(parts.graph, record, request.from);
  const state = snapshot.values as State;
  let plan: PlannedSubtask[] | undefined;
  let planAnswer: string | null | undefined;
  if (request.plan !== undefined || request.args !== undefined) {
    let edited = state.plan ?? [];
    if (request.plan !== undefined) {
      const parsed = z.array(PlannedSubtask).safeParse(request.plan);
      if (!parsed.success) throw new InputError("invalid_plan", `the plan is not a list of subtasks: ${z.prettifyError(parsed.error)}`);
      edited = parsed.data;
    }
    edited = withArgs(edited, request.args);
    // The plan's answer stays when it still reads for the edited steps.
    const checked = checkPlan(edited, parts.deps, { allowedTools: state.settings.allowedTools ?? null, maxSubtasks: state.settings.maxSubtasks }, state.planAnswer ?? undefined);
    if ("errors" in checked) throw new InputError("invalid_plan", `the fork's plan is not valid: ${checked.errors.join("; ")}`, { errors: checked.errors });
    plan = checked.subtasks;
    planAnswer = checked.answer ?? null;
  }
  const ref = (handle: string): string => {
    const key = parseStashRef(handle);
    return key.runId === record.id ? stashRef({ runId: ids.runId, subtaskId: key.subtaskId }) : handle;
  };
  const forked = forkedState(state, checkpoint ? {} : { from: request.from }, { runId: ids.runId, startedAt: Date.now(), ref, ...(plan ? { plan } : {}) });
  if (planAnswer !== undefined) forked.values.planAnswer = planAnswer;
  const origin: ForkOrigin = {
    runId: record.id,
    threadId: record.threadId,
    checkpointId: String(snapshot.config.configurable?.checkpoint_id ?? ""),
    ...(checkpoint ? {} : { subtaskId: request.from }),
  };
  return { runId: ids.runId, threadId: ids.threadId, threadName: ids.threadName, origin, state: forked };
}

/**
 * Writes a prepared fork: the kept results copied to the new run in the stash, and the new
 * thread's first checkpoint written by LangGraph's `updateState` as the execute node, so the
 * graph routes on from it as from any superstep (`stream(null)` continues there).
 */
export async function seedFork(parts: { store: Store; graph: TroupeGraph }, fork: PreparedFork): Promise<void> {
  await parts.store.stash.copyResults(fork.origin.runId, fork.runId, fork.state.keep);
  try {
    await parts.graph.updateState({ configurable: { thread_id: fork.threadId } }, fork.state.values, FORK_AS_NODE);
  } catch (error) {
    await parts.store.retention.deleteThreadCheckpoints([fork.threadId]).catch(() => {});
    throw error;
  }
}
