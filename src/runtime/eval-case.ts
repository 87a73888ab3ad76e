import { ConflictError } from "../core/errors.js";

/** What was asked of a run that is an eval's case. */
export type EvalCaseAction = "resume" | "fork" | "cancel";

const REFUSED: Record<EvalCaseAction, string> = {
  resume: "an eval's cases are not resumed (run the eval again)",
  fork: "an eval's cases are not forked (run the eval again)",
  cancel: "an eval's cases are not cancelled one by one (cancel the eval instead)",
};

/**
 * Refuses (`eval_case`, 409) to resume, fork or cancel on its own a run that is a case of an
 * eval: its files are in its case's workspace, not this instance's, so going on here would work on
 * the wrong folder, and it is cancelled with its eval. The one check the engine, a fork and the
 * task service share.
 */
export function refuseEvalCase(run: { id: string; evalId: string | null }, action: EvalCaseAction): void {
  if (run.evalId === null) return;
  throw new ConflictError("eval_case", `run ${run.id} is a case of eval ${run.evalId}; ${REFUSED[action]}`, { runId: run.id, evalId: run.evalId });
}
