import { z } from "zod";

/** When the critic reviews a run's outcomes (docs/runs.md#routes-and-review). */
export const REVIEW_MODES = ["auto", "always", "never"] as const;

/**
 * `always`: every round is reviewed; `never`: no critic call, the answer is written from the
 * outcomes (a failed subtask still fails the run); `auto` (the default): the review is skipped
 * only when every outcome is a direct tool result that succeeded, with its files verified and
 * nothing untrusted in it — there is nothing a model decided for the critic to judge.
 */
export const ReviewMode = z.enum(REVIEW_MODES, { error: `review must be one of ${REVIEW_MODES.join(", ")}` });
export type ReviewMode = z.infer<typeof ReviewMode>;

export const DEFAULT_REVIEW_MODE: ReviewMode = "auto";

/** Which route a run's plan took, and why: `fast` when the plan is one subtask (its result is the answer), else `planned`. */
export interface RouteDecision {
  route: "fast" | "planned";
  reason: string;
}

/** Whether a round's review ran or was skipped, and why. */
export interface ReviewDecision {
  /** The review round (1 for the first). */
  round: number;
  review: "ran" | "skipped";
  reason: string;
}
