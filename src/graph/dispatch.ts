import { createHash } from "node:crypto";
import { GraphBubbleUp, GraphInterrupt, isGraphBubbleUp, isGraphInterrupt, type LangGraphRunnableConfig, task } from "@langchain/langgraph";
import { LIMITS } from "../core/limits.js";
import { isArgRef, type PlannedSubtask, type SubtaskResult } from "../core/plan.js";
import { stableStringify } from "../core/text.js";
import { Semaphore } from "../tools/concurrency.js";
import { emit, type GraphDeps } from "./deps.js";
import { createRunSubtask, type SubtaskPayload } from "./nodes/execution.js";
import { statusOf } from "./schedule.js";
import type { State, Update } from "./state.js";

/** Thrown inside a subtask's task that must not run now (a dependency waits for a person, the run drains or ran out of budget): nothing is saved, so it runs when the run goes on. */
class HeldBack extends GraphBubbleUp {
  constructor(reason: string) {
    super(reason);
    this.name = "HeldBack";
  }
}

/**
 * The name of a subtask's LangGraph task. LangGraph identifies a task by its name and the order
 * of calls in its parent; the dispatcher calls them in plan order, and the name carries the
 * subtask's id and a fingerprint of what it does, so a replay can never hand one subtask's saved
 * result to another (or to a changed plan's subtask of the same id).
 */
export function subtaskTaskName(subtask: PlannedSubtask, attempt: number): string {
  const fingerprint = createHash("sha256").update(stableStringify({ ...subtask, attempt })).digest("hex").slice(0, 12);
  return `subtask:${subtask.id}:${fingerprint}`;
}

/** The subtask id a task name carries (`subtask:<id>:<fingerprint>`), or undefined for another task. */
export function subtaskIdOfTask(name: string): string | undefined {
  const match = /^subtask:(.+):[0-9a-f]{12}$/.exec(name);
  return match?.[1];
}

/** What one subtask's task hands back: its part of the node's update. */
type SubtaskUpdate = Update;

/** Everything a subtask's worker needs, from the plan and the results its dependencies have now. */
export function subtaskPayload(state: State, subtask: PlannedSubtask, results: ReadonlyMap<string, SubtaskResult>): SubtaskPayload {
  const byId = new Map(state.plan.map((item) => [item.id, item]));
  const previous = state.results[subtask.id];
  return {
    runId: state.runId,
    task: state.task,
    subtask,
    attempt: (previous?.attempts ?? 0) + 1,
    round: state.reviews.length,
    retryFailedItems: previous?.retryFailedItems === true,
    feedback: state.redoFeedback[subtask.id] ?? [],
    maxSteps: state.settings.maxWorkerSteps,
    mapConcurrency: state.settings.mapConcurrency ?? LIMITS.mapConcurrency,
    promptBudget: state.settings.promptBudget ?? LIMITS.promptTokenBudget,
    allowedTools: state.settings.allowedTools ?? null,
    consumers: state.plan.filter((other) => Object.values(other.args).some((arg) => isArgRef(arg) && arg.ref === subtask.id)).map((other) => other.id),
    dependencies: subtask.dependsOn.map((dependency) => {
      const result = results.get(dependency);
      return { id: dependency, label: byId.get(dependency)?.label ?? dependency, summary: result?.summary ?? "", ref: result?.ref ?? null };
    }),
  };
}

/** The updates of several subtasks as one node update (lists joined in plan order, metrics summed, the first stop kept). */
function mergeUpdates(parts: SubtaskUpdate[]): Update {
  const merged: Update = { results: {}, toolCalls: [], nodes: [], modelIncidents: [], metrics: {} };
  for (const part of parts) {
    Object.assign(merged.results as Record<string, SubtaskResult>, part.results ?? {});
    (merged.toolCalls as unknown[]).push(...((part.toolCalls as unknown[] | undefined) ?? []));
    (merged.nodes as string[]).push(...((part.nodes as string[] | undefined) ?? []));
    (merged.modelIncidents as unknown[]).push(...((part.modelIncidents as unknown[] | undefined) ?? []));
    const metrics = merged.metrics as Record<string, number>;
    for (const [key, value] of Object.entries((part.metrics as Record<string, number> | undefined) ?? {})) metrics[key] = (metrics[key] ?? 0) + value;
    if (part.stopReason && !merged.stopReason) {
      merged.stopReason = part.stopReason;
      if (part.budgetStop) merged.budgetStop = part.budgetStop;
    }
  }
  return merged;
}

/** A subtask the plan still has to run: pending (or left running by a run that stopped). */
export function isUnfinished(state: Pick<State, "results">, id: string): boolean {
  const status = statusOf(state.results, id);
  return status === "pending" || status === "running";
}

/**
 * The `execute` node: runs the plan's unfinished subtasks, each as its own LangGraph task, and
 * starts each the moment its last dependency has finished and a concurrency slot is free —
 * whatever else is running, not wave by wave. The tasks are called at once, in plan order (each
 * waits inside for its dependencies), so their identities do not depend on which finished
 * first: a replay after a crash hands every finished subtask its own saved result and runs only
 * the others. A subtask waiting for a person's approval pauses the run only once nothing else
 * can go on; the node then raises every pending approval at once. A subtask whose dependency
 * failed is skipped; one whose dependency waits, or that would start after a drain request or a
 * spent budget, is held back unsaved and stays pending.
 */
export function createExecuteNode(deps: GraphDeps) {
  const runSubtask = createRunSubtask(deps);
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const slots = new Semaphore(config.maxConcurrency ?? LIMITS.subtaskConcurrency);
    const control = (config as { control?: { drainRequested?: boolean } }).control;
    const ledger = deps.ledgers?.get(state.runId);
    /** Results known so far: earlier rounds' and this node's finished subtasks. */
    const known = new Map<string, SubtaskResult>(Object.entries(state.results));
    const calls = new Map<string, Promise<SubtaskUpdate>>();
    let stopped = false;
    const held = (reason: string): never => {
      throw new HeldBack(reason);
    };
    /** A dependency's result once it has one; rejects (held) when it cannot have one in this node. */
    const resultOf = async (id: string): Promise<SubtaskResult | undefined> => {
      const call = calls.get(id);
      if (call === undefined) return known.get(id);
      try {
        await call;
      } catch (error) {
        if (isGraphBubbleUp(error)) held(`${id} has not finished`);
        throw error;
      }
      return known.get(id);
    };
    for (const subtask of state.plan.filter((item) => isUnfinished(state, item.id))) {
      const attempt = (state.results[subtask.id]?.attempts ?? 0) + 1;
      const run = task(subtaskTaskName(subtask, attempt), async (): Promise<SubtaskUpdate> => {
        const inputs = await Promise.all(subtask.dependsOn.map(async (id) => ({ id, result: await resultOf(id) })));
        const blocker = inputs.find(({ result }) => result?.status === "failed" || result?.status === "skipped");
        if (blocker) {
          const reason = `not run: ${blocker.id} ${blocker.result?.status === "failed" ? "failed" : "was skipped"}`;
          emit(config, { type: "subtask-skip", subtaskId: subtask.id, reason });
          return { results: { [subtask.id]: { status: "skipped", attempts: state.results[subtask.id]?.attempts ?? 0, error: reason } } };
        }
        if (inputs.some(({ result }) => result?.status !== "done")) held("a dependency has no result");
        const release = await slots.acquire(config.signal);
        try {
          // Checked once a slot is free: nothing new starts after a drain request, a budget stop or a cancellation.
          if (stopped || control?.drainRequested || ledger?.stop !== undefined) held("the run is stopping");
          return await runSubtask(subtaskPayload(state, subtask, known), config);
        } finally {
          release();
        }
      })();
      calls.set(
        subtask.id,
        Promise.resolve(run).then(async (pending) => {
          const update: SubtaskUpdate = await pending;
          const result = (update.results as Record<string, SubtaskResult> | undefined)?.[subtask.id];
          if (result) known.set(subtask.id, result);
          if (update.stopReason) stopped = true;
          return update;
        }),
      );
    }
    const settled = await Promise.allSettled(calls.values());
    const updates: SubtaskUpdate[] = [];
    const interrupts: GraphInterrupt["interrupts"] = [];
    for (const outcome of settled) {
      if (outcome.status === "fulfilled") updates.push(outcome.value);
      else if (isGraphInterrupt(outcome.reason)) interrupts.push(...outcome.reason.interrupts);
      else if (!(outcome.reason instanceof HeldBack) && !isGraphBubbleUp(outcome.reason)) throw outcome.reason;
    }
    if (config.signal?.aborted) throw config.signal.reason;
    // Every subtask that can go on has: the run pauses, asking for every approval at once.
    if (interrupts.length > 0) throw new GraphInterrupt(interrupts);
    const merged = mergeUpdates(updates);
    const metrics = merged.metrics as Record<string, number>;
    return { ...merged, needsReview: true, nodes: ["execute", ...(merged.nodes as string[])], metrics: { ...metrics, nodeVisits: (metrics.nodeVisits ?? 0) + 1 } };
  };
}
