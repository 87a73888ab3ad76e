import { z } from "zod";
import { TroupeError } from "./errors.js";

/** Limits on what one run may spend. Every field is optional; an absent limit is no limit. */
export const Budget = z
  .object({
    maxModelCalls: z.number().int({ error: "maxModelCalls must be a whole number" }).positive({ error: "maxModelCalls must be at least 1" }).optional(),
    maxTokens: z.number().int({ error: "maxTokens must be a whole number" }).positive({ error: "maxTokens must be at least 1" }).optional(),
    maxCostUsd: z.number().positive({ error: "maxCostUsd must be more than 0" }).optional(),
    /** Time the run spends running (not waiting for a person), in milliseconds. */
    maxWallTimeMs: z.number().int({ error: "maxWallTimeMs must be a whole number" }).positive({ error: "maxWallTimeMs must be more than 0" }).optional(),
  })
  .strict();
export type Budget = z.infer<typeof Budget>;

export type BudgetLimit = keyof Budget;

/** Which limit stopped a run, its value, and what had been used when it did. */
export const BudgetStop = z.object({
  limit: z.enum(["maxModelCalls", "maxTokens", "maxCostUsd", "maxWallTimeMs"]),
  max: z.number(),
  used: z.number(),
});
export type BudgetStop = z.infer<typeof BudgetStop>;

/** What a run has used so far, as the budget counts it. */
export interface BudgetUsage {
  modelCalls: number;
  tokens: number;
  costUsd: number;
  wallTimeMs: number;
}

/** The first limit the usage has reached, if any. */
export function reachedLimit(budget: Budget, usage: BudgetUsage): BudgetStop | undefined {
  if (budget.maxModelCalls !== undefined && usage.modelCalls >= budget.maxModelCalls) return { limit: "maxModelCalls", max: budget.maxModelCalls, used: usage.modelCalls };
  if (budget.maxTokens !== undefined && usage.tokens >= budget.maxTokens) return { limit: "maxTokens", max: budget.maxTokens, used: usage.tokens };
  if (budget.maxCostUsd !== undefined && usage.costUsd >= budget.maxCostUsd) return { limit: "maxCostUsd", max: budget.maxCostUsd, used: usage.costUsd };
  if (budget.maxWallTimeMs !== undefined && usage.wallTimeMs >= budget.maxWallTimeMs) return { limit: "maxWallTimeMs", max: budget.maxWallTimeMs, used: usage.wallTimeMs };
  return undefined;
}

const LIMIT_WORDS: Record<BudgetLimit, string> = {
  maxModelCalls: "model calls",
  maxTokens: "tokens",
  maxCostUsd: "cost",
  maxWallTimeMs: "wall time",
};

/** A budget stop in words: `cost: $0.0123 of $0.01`. */
export function describeBudgetStop(stop: BudgetStop): string {
  if (stop.limit === "maxCostUsd") return `${LIMIT_WORDS[stop.limit]}: $${stop.used.toFixed(4)} of $${stop.max}`;
  if (stop.limit === "maxWallTimeMs") return `${LIMIT_WORDS[stop.limit]}: ${(stop.used / 1000).toFixed(1)} s of ${(stop.max / 1000).toFixed(1)} s`;
  return `${LIMIT_WORDS[stop.limit]}: ${stop.used} of ${stop.max}`;
}

/** Raised where a model call would go past the run's budget; the graph turns it into the `budget_exhausted` stop. */
export class BudgetExhaustedError extends TroupeError {
  readonly stop: BudgetStop;

  constructor(stop: BudgetStop) {
    super("budget_exhausted", `the run's budget is exhausted (${describeBudgetStop(stop)})`, { ...stop });
    this.name = "BudgetExhaustedError";
    this.stop = stop;
  }
}

export function isBudgetExhausted(error: unknown): error is BudgetExhaustedError {
  return error instanceof BudgetExhaustedError;
}
