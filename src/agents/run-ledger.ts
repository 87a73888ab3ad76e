import { type Budget, BudgetExhaustedError, type BudgetStop, type BudgetUsage, reachedLimit } from "../core/budget.js";

/** What a run had used before this stretch of it (a resumed run carries on from there). */
export interface UsedSoFar {
  llmCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Time the run has spent running so far, in milliseconds. */
  activeMs: number;
}

/** What an admitted call holds of the budget until it settles: its prompt's tokens and cost. */
export interface Reservation {
  tokens: number;
  costUsd: number;
  released?: boolean;
}

/**
 * The spending of one run while it goes, shared by all its nodes (parallel workers included):
 * every model call is admitted against the budget before it is made, and settled with its real
 * usage after. Also remembers the models a run has fallen back from, so later calls of the run
 * go straight to the model that works.
 */
export class RunLedger {
  readonly budget: Budget;
  readonly #deadline = new AbortController();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #startedAt = performance.now();
  readonly #activeBefore: number;
  readonly #skipped = new Set<string>();
  #calls: number;
  #tokens: number;
  #cost: number;
  /** The prompts of admitted calls still in flight. */
  readonly #reserved = { tokens: 0, costUsd: 0 };
  #stopNoticed = false;
  /** The first limit reached, once one is. */
  stop: BudgetStop | undefined;

  constructor(budget: Budget = {}, used: UsedSoFar = { llmCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, activeMs: 0 }) {
    this.budget = budget;
    this.#calls = used.llmCalls;
    this.#tokens = used.promptTokens + used.completionTokens;
    this.#cost = used.costUsd;
    this.#activeBefore = used.activeMs;
    if (budget.maxWallTimeMs !== undefined) {
      const remaining = Math.max(0, budget.maxWallTimeMs - used.activeMs);
      this.#timer = setTimeout(() => this.#deadline.abort(new BudgetExhaustedError(this.wallTimeStop())), remaining);
      this.#timer.unref();
    }
  }

  /** Aborts when the run's wall time is up, so calls in flight stop too. */
  get signal(): AbortSignal {
    return this.#deadline.signal;
  }

  /** Whether admitting a call needs its prompt counted first (a token or cost limit is set). */
  get needsEstimate(): boolean {
    return this.budget.maxTokens !== undefined || this.budget.maxCostUsd !== undefined;
  }

  usage(): BudgetUsage {
    return { modelCalls: this.#calls, tokens: this.#tokens, costUsd: this.#cost, wallTimeMs: this.#activeBefore + (performance.now() - this.#startedAt) };
  }

  wallTimeStop(): BudgetStop {
    return { limit: "maxWallTimeMs", max: this.budget.maxWallTimeMs ?? 0, used: Math.round(this.usage().wallTimeMs) };
  }

  /** Records the stop (the first one wins) and throws it. */
  refuse(stop: BudgetStop): never {
    this.stop ??= stop;
    throw new BudgetExhaustedError(stop);
  }

  /**
   * Throws BudgetExhaustedError when a limit is already reached: for work that spends outside
   * troupe's own model calls (a remote agent, whose reported usage is `carry`-ed afterwards).
   */
  check(): void {
    if (this.#deadline.signal.aborted) this.refuse(this.wallTimeStop());
    const reached = reachedLimit(this.budget, this.usage());
    if (reached) this.refuse(reached);
  }

  /**
   * Admits one model call, or throws BudgetExhaustedError: when a limit is already reached, or
   * when the call's prompt alone (`estimate`) would go past the token or cost limit, counting the
   * prompts of the calls still in flight — parallel workers, a subtask started while the plan
   * streams — which are reserved until they settle. Returns the reservation to settle or release.
   */
  admit(estimate?: { tokens: number; costUsd: number }): Reservation | undefined {
    if (this.#deadline.signal.aborted) this.refuse(this.wallTimeStop());
    const reached = reachedLimit(this.budget, this.usage());
    if (reached) this.refuse(reached);
    const { maxTokens, maxCostUsd } = this.budget;
    const tokens = this.#tokens + this.#reserved.tokens;
    const cost = this.#cost + this.#reserved.costUsd;
    if (estimate && maxTokens !== undefined && tokens + estimate.tokens > maxTokens) this.refuse({ limit: "maxTokens", max: maxTokens, used: this.#tokens });
    if (estimate && maxCostUsd !== undefined && cost + estimate.costUsd > maxCostUsd) this.refuse({ limit: "maxCostUsd", max: maxCostUsd, used: this.#cost });
    this.#calls += 1;
    if (!estimate) return undefined;
    this.#reserved.tokens += estimate.tokens;
    this.#reserved.costUsd += estimate.costUsd;
    return { ...estimate };
  }

  /** Adds a finished call's real usage, in place of what was reserved for it. */
  settle(usage: { promptTokens: number; completionTokens: number; costUsd: number }, reservation?: Reservation): void {
    this.release(reservation);
    this.#tokens += usage.promptTokens + usage.completionTokens;
    this.#cost += usage.costUsd;
  }

  /** Frees what was reserved for a call that ended without usage to count (it failed or was cancelled). */
  release(reservation: Reservation | undefined): void {
    if (!reservation || reservation.released) return;
    reservation.released = true;
    this.#reserved.tokens -= reservation.tokens;
    this.#reserved.costUsd -= reservation.costUsd;
  }

  /**
   * Counts model calls made before a pause whose results are replayed now (a durable worker
   * step): the state's metrics, which this ledger started from, do not hold them yet.
   */
  carry(usage: { llmCalls: number; promptTokens: number; completionTokens: number; costUsd: number }): void {
    this.#calls += usage.llmCalls;
    this.settle(usage);
  }

  /** Marks a model as given up on for the rest of this run. */
  skip(modelId: string): void {
    this.#skipped.add(modelId);
  }

  isSkipped(modelId: string): boolean {
    return this.#skipped.has(modelId);
  }

  /** True the first time only: the stop is announced once however many nodes hit it. */
  claimStopNotice(): boolean {
    if (this.#stopNoticed) return false;
    this.#stopNoticed = true;
    return true;
  }

  dispose(): void {
    if (this.#timer) clearTimeout(this.#timer);
  }
}
