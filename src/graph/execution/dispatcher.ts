import { createHash } from "node:crypto";
import { GraphBubbleUp, GraphInterrupt, isGraphBubbleUp, isGraphInterrupt, type LangGraphRunnableConfig, task } from "@langchain/langgraph";
import type { RunLedger } from "../../agents/run-ledger.js";
import { type AgentLoad, type Assignment, chooseAgent, fittingAgents } from "../../core/agent-fit.js";
import { agentProfiles, fileTools } from "../../core/plan-check.js";
import type { BoardMessage } from "../../core/board.js";
import { errorMessage } from "../../core/errors.js";
import { LIMITS } from "../../core/limits.js";
import type { PlannedSubtask, SubtaskResult } from "../../core/plan.js";
import { stableStringify } from "../../core/text.js";
import { Semaphore } from "../../tools/concurrency.js";
import { LiveBoard } from "../board.js";
import { emit, firstPassOf, type GraphDeps, ledgerOf } from "../deps.js";
import { durableStep } from "../durable.js";
import { createRunSubtask } from "./run-subtask.js";
import { subtaskPayload } from "./subtask-payload.js";
import { answeringSubtask } from "../route.js";
import type { State, Update } from "../state.js";

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

/** What one subtask's task hands back: its part of the node's update. */
type SubtaskUpdate = Update;

/** The updates of several subtasks as one node update (lists joined in plan order, metrics summed, the first stop kept). */
function mergeUpdates(parts: SubtaskUpdate[]): Update {
  const merged: Update = { results: {}, toolCalls: [], nodes: [], modelIncidents: [], metrics: {}, board: [] };
  for (const part of parts) {
    Object.assign(merged.results as Record<string, SubtaskResult>, part.results ?? {});
    (merged.toolCalls as unknown[]).push(...((part.toolCalls as unknown[] | undefined) ?? []));
    (merged.board as BoardMessage[]).push(...((part.board as BoardMessage[] | undefined) ?? []));
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

/** The plan so far and what it runs with; the plan may still grow while it streams in. */
export interface DispatchContext {
  state: State;
  /** The subtasks known so far, in plan order (the whole plan, or what has streamed in). */
  plan: () => readonly PlannedSubtask[];
}

/**
 * Runs subtasks as LangGraph tasks, each starting the moment its inputs exist and a
 * concurrency slot is free. `add` calls a subtask's task at once, in the order the plan gives,
 * so task identities never depend on which subtask finished first; the task waits inside for its
 * dependencies (also ones added later, as a streamed plan grows). A subtask whose dependency
 * failed is skipped; one whose dependency cannot finish now (it waits for a person), or that
 * would start after a drain request, a spent budget or `abort()`, is held back, unsaved, and
 * stays pending.
 */
export class Dispatcher {
  readonly #runSubtask: ReturnType<typeof createRunSubtask>;
  readonly #context: DispatchContext;
  readonly #config: LangGraphRunnableConfig;
  readonly #slots: Semaphore;
  readonly #control: { drainRequested?: boolean } | undefined;
  readonly #ledger: RunLedger | undefined;
  /** Results known so far: earlier rounds' and this dispatcher's finished subtasks. */
  readonly #known: Map<string, SubtaskResult>;
  readonly #calls = new Map<string, Promise<SubtaskUpdate>>();
  /** Dependencies named before the subtask itself was added (a streamed plan's forward references). */
  readonly #awaited = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  readonly #abort = new AbortController();
  readonly #signal: AbortSignal;
  readonly #deps: GraphDeps;
  /** Started before its plan is known to be valid (a streamed plan): see `confirm`. */
  readonly #speculative: boolean;
  /** The plan is whole and valid (always, unless it still streams): only then can a subtask be known to be its only one. */
  #confirmed: boolean;
  /** Settles when the plan is judged: resolved once valid, rejected when dropped (calls with effects wait on it). */
  readonly #effects: Promise<void>;
  #allowEffects: () => void = () => undefined;
  #refuseEffects: (reason: Error) => void = () => undefined;
  #stopped = false;
  /** The board while these subtasks run: the state's messages and what they post. */
  readonly #board: LiveBoard;
  /** Subtasks running by agent, and started in the run by agent (earlier rounds' included), for assignment by load. */
  readonly #running = new Map<string, number>();
  readonly #started = new Map<string, number>();
  /** On a resumed pass: settled once the saved results of finished subtasks have been handed back (their posts are on the board). */
  #replays: Promise<void> | undefined;

  constructor(deps: GraphDeps, context: DispatchContext, config: LangGraphRunnableConfig, options: { speculative?: boolean } = {}) {
    this.#deps = deps;
    this.#speculative = options.speculative === true;
    this.#confirmed = !this.#speculative;
    this.#effects = new Promise<void>((resolve, reject) => {
      this.#allowEffects = resolve;
      this.#refuseEffects = reject;
    });
    // Nobody may wait on it at all (a plan dropped before any call with an effect): not an unhandled rejection.
    this.#effects.catch(() => undefined);
    if (!this.#speculative) this.#allowEffects();
    this.#runSubtask = createRunSubtask(deps);
    this.#context = context;
    this.#signal = config.signal ? AbortSignal.any([config.signal, this.#abort.signal]) : this.#abort.signal;
    this.#config = { ...config, signal: this.#signal };
    this.#slots = new Semaphore(config.maxConcurrency ?? LIMITS.subtaskConcurrency);
    this.#control = (config as { control?: { drainRequested?: boolean } }).control;
    this.#ledger = ledgerOf(config);
    this.#known = new Map(Object.entries(context.state.results));
    this.#board = new LiveBoard(context.state.board ?? []);
    for (const subtask of context.state.plan) {
      const result = context.state.results[subtask.id];
      if (!result || result.status === "pending" || result.status === "skipped") continue;
      const agent = result.assignment?.agent ?? subtask.agent;
      this.#started.set(agent, (this.#started.get(agent) ?? 0) + 1);
    }
  }

  /**
   * The agent a subtask runs on, counted as running: its own, or — when it asks for a capability —
   * the least busy of the agents that fit (fewest running now, then fewest started in the run).
   * That choice is a durable step, so a subtask that runs again after a pause keeps its agent (its
   * saved steps are that agent's); it is counted in the step itself, so two subtasks starting
   * together do not both see the same agent idle.
   */
  async #assign(subtask: PlannedSubtask): Promise<{ subtask: PlannedSubtask; assignment?: Assignment }> {
    const count = (agent: string): void => {
      this.#running.set(agent, (this.#running.get(agent) ?? 0) + 1);
      this.#started.set(agent, (this.#started.get(agent) ?? 0) + 1);
    };
    if (subtask.capability === undefined) {
      count(subtask.agent);
      return { subtask };
    }
    const candidates = fittingAgents(agentProfiles(this.#deps, this.#context.state.settings.allowedTools), subtask, fileTools(this.#deps));
    const loadOf = (agent: string): AgentLoad => ({ running: this.#running.get(agent) ?? 0, assigned: this.#started.get(agent) ?? 0 });
    const { value: assignment, replayed } = await durableStep("assign", async () => {
      const chosen = chooseAgent(candidates, subtask, loadOf) ?? null;
      count(chosen?.agent ?? subtask.agent);
      return chosen;
    });
    if (replayed) count(assignment?.agent ?? subtask.agent);
    if (!assignment) return { subtask };
    return { subtask: { ...subtask, agent: assignment.agent }, assignment };
  }

  /** The subtasks added so far, by id. */
  has(id: string): boolean {
    return this.#calls.has(id);
  }

  /** The plan is valid as a whole: calls with effects (and those a person must approve) go on. */
  confirm(): void {
    this.#confirmed = true;
    this.#allowEffects();
  }

  /** Stops what was started (a speculative start from a plan that turned out invalid); their results are not kept, and their held effects never happen. */
  abort(reason: string): void {
    this.#stopped = true;
    this.#refuseEffects(new Error(reason));
    this.#abort.abort(new Error(reason));
  }

  #held(reason: string): never {
    throw new HeldBack(reason);
  }

  /** A dependency's result once it has one; throws (held) when it cannot have one now. */
  async #resultOf(id: string): Promise<SubtaskResult | undefined> {
    let call = this.#calls.get(id);
    if (call === undefined && !this.#known.has(id) && !this.#stopped) {
      // Not added yet (named ahead in a streaming plan): wait until it is, or until the plan is complete.
      let waiting = this.#awaited.get(id);
      if (!waiting) {
        let resolve = (): void => undefined;
        const promise = new Promise<void>((done) => (resolve = done));
        waiting = { promise, resolve };
        this.#awaited.set(id, waiting);
      }
      await waiting.promise;
      call = this.#calls.get(id);
    }
    if (call === undefined) return this.#known.get(id);
    try {
      await call;
    } catch (error) {
      if (isGraphBubbleUp(error)) this.#held(`${id} has not finished`);
      throw error;
    }
    return this.#known.get(id);
  }

  /** Calls the subtask's task now; it starts its work when its inputs exist and a slot is free. */
  add(subtask: PlannedSubtask): void {
    const { state } = this.#context;
    const config = this.#config;
    const attempt = (state.results[subtask.id]?.attempts ?? 0) + 1;
    const run = task(subtaskTaskName(subtask, attempt), async (): Promise<SubtaskUpdate> => {
      try {
        const inputs = await Promise.all(subtask.dependsOn.map(async (id) => ({ id, result: await this.#resultOf(id) })));
        const blocker = inputs.find(({ result }) => result?.status === "failed" || result?.status === "skipped");
        if (blocker) {
          const reason = `not run: ${blocker.id} ${blocker.result?.status === "failed" ? "failed" : "was skipped"}`;
          emit(config, { type: "subtask-skip", subtaskId: subtask.id, reason });
          return { results: { [subtask.id]: { status: "skipped", attempts: state.results[subtask.id]?.attempts ?? 0, error: reason } } };
        }
        if (inputs.some(({ result }) => result?.status !== "done")) this.#held("a dependency has no result");
        const release = await this.#slots.acquire(this.#signal);
        let agent: string | undefined;
        try {
          // Checked once a slot is free: nothing new starts after a drain request, a budget stop or an abort.
          if (this.#stopped || this.#control?.drainRequested || this.#ledger?.stop !== undefined) this.#held("the run is stopping");
          // On a resumed pass, what finished before the stop is handed back first, so its posts are on the board.
          if (!firstPassOf(config)) await (this.#replays ??= new Promise<void>((resolve) => setImmediate(resolve)));
          const assigned = await this.#assign(subtask);
          agent = assigned.subtask.agent;
          if (assigned.assignment) emit(config, { type: "agent-assign", subtaskId: subtask.id, ...assigned.assignment });
          const payload = subtaskPayload({ ...state, plan: [...this.#context.plan()] }, assigned.subtask, this.#known);
          if (assigned.assignment) payload.assignment = assigned.assignment;
          return await this.#runSubtask(payload, config, {
            board: this.#board,
            planIds: () => this.#context.plan().map((item) => item.id),
            answersTask: () => this.#confirmed && answeringSubtask(this.#context.plan(), state.settings.review)?.id === subtask.id,
            ...(this.#speculative ? { effectsAllowed: () => this.#effects } : {}),
          });
        } finally {
          if (agent !== undefined) this.#running.set(agent, (this.#running.get(agent) ?? 1) - 1);
          release();
        }
      } catch (error) {
        // Aborted (its plan turned out invalid): ended as held back, so nothing of it is saved and
        // LangGraph does not take the abort for the step's failure.
        if (this.#abort.signal.aborted && !isGraphInterrupt(error)) this.#held("its plan was dropped");
        throw error;
      }
    })();
    this.#calls.set(
      subtask.id,
      Promise.resolve(run).then(async (pending) => {
        const update: SubtaskUpdate = await pending;
        const result = (update.results as Record<string, SubtaskResult> | undefined)?.[subtask.id];
        // A replayed subtask's posts join the board as its saved result comes back (a live one's are there already).
        this.#board.absorb((update.board as BoardMessage[] | undefined) ?? []);
        if (result) this.#known.set(subtask.id, result);
        if (update.stopReason) this.#stopped = true;
        return update;
      }),
    );
    this.#awaited.get(subtask.id)?.resolve();
  }

  /**
   * Waits for every subtask added. Returns their update as one node update; raises every pending
   * approval at once when some subtask waits for a person (after all others that could go on
   * have). After `abort()`, returns nothing of what ran: its results are discarded.
   */
  async finish(): Promise<Update> {
    // The plan is complete: dependencies never added will not be.
    for (const waiting of this.#awaited.values()) waiting.resolve();
    const settled = await Promise.allSettled(this.#calls.values());
    // Aborted: what ran is discarded (and said so, for whoever showed it running). Cancelled (the run's own signal): the run stops.
    if (this.#abort.signal.aborted) {
      const reason = `dropped: ${errorMessage(this.#abort.signal.reason)}`;
      for (const id of this.#calls.keys()) emit(this.#config, { type: "subtask-skip", subtaskId: id, reason });
      return {};
    }
    if (this.#signal.aborted) throw this.#signal.reason;
    const updates: SubtaskUpdate[] = [];
    const interrupts: GraphInterrupt["interrupts"] = [];
    for (const outcome of settled) {
      if (outcome.status === "fulfilled") updates.push(outcome.value);
      else if (isGraphInterrupt(outcome.reason)) interrupts.push(...outcome.reason.interrupts);
      else if (!(outcome.reason instanceof HeldBack) && !isGraphBubbleUp(outcome.reason)) throw outcome.reason;
    }
    // Every subtask that can go on has: the run pauses, asking for every approval at once.
    if (interrupts.length > 0) throw new GraphInterrupt(interrupts);
    return mergeUpdates(updates);
  }
}

/** A dispatcher's update as part of the node that ran it (named and counted when it is the execute node): the work is due for review. */
export function executed(update: Update, node?: string): Update {
  const metrics = (update.metrics ?? {}) as Record<string, number>;
  const nodes = (update.nodes as string[] | undefined) ?? [];
  return { ...update, needsReview: true, nodes: node ? [node, ...nodes] : nodes, metrics: node ? { ...metrics, nodeVisits: (metrics.nodeVisits ?? 0) + 1 } : metrics };
}
