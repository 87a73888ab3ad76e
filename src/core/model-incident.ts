/**
 * Something that happened on the way to a model's answer and belongs in the decision trace: a
 * failed attempt that was retried, or a model given up on for the next in its fallback chain.
 */
export interface ModelIncident {
  kind: "retry" | "fallback";
  /** planner, worker, critic or synthesizer. */
  role: string;
  /** The `provider:model` that failed. */
  model: string;
  /** The attempt that failed, from 1. */
  attempt: number;
  reason: string;
  /** For a retry: how long troupe waited before the next attempt. */
  delayMs?: number;
  /** For a fallback: the `provider:model` used instead. */
  to?: string;
  subtaskId?: string;
  at: number;
}
