import path from "node:path";
import type { Artifact, PlannedSubtask, SubtaskResult } from "../core/plan.js";
import { describeSources, isUntrusted } from "../core/provenance.js";
import { DEFAULT_REVIEW_MODE, type ReviewDecision, type ReviewMode, type RouteDecision } from "../core/review-mode.js";
import type { Stash } from "../core/stash.js";
import { artifactProblem } from "./artifacts.js";
import type { State } from "./state.js";

/**
 * The fast route (seed 004) and the review modes. A plan of one subtask is the fast route: a
 * worker step's result is the answer (its worker is told so, and no synthesizer is called when
 * the result is text), a direct tool step's result is filled into the plan's answer template by
 * code (graph/template-answer.ts) or, without one, worded by the synthesizer. Whether the
 * critic reviews a round is decided here from the run's `review` mode and its outcomes.
 * `review: always` is today's full pipeline: every round reviewed, every answer written by the
 * synthesizer, so it takes no fast route.
 */

/** The worker step whose result is the run's answer: the plan's only subtask, not a direct tool call and not a map; none with `review: always`. */
export function answeringSubtask(plan: readonly PlannedSubtask[], mode: ReviewMode | undefined): PlannedSubtask | undefined {
  const [only] = plan;
  if (mode === "always") return undefined;
  return plan.length === 1 && only !== undefined && only.tool === undefined && only.mapOver === undefined ? only : undefined;
}

/** The route a plan takes, and why; null without a plan. `answer` is the plan's answer template, when it stated one. */
export function routeOf(plan: readonly PlannedSubtask[], mode: ReviewMode | undefined, answer?: string | null): RouteDecision | null {
  const [only] = plan;
  if (only === undefined) return null;
  if (mode === "always") return { route: "planned", reason: "review: always runs the whole pipeline (critic and synthesizer)" };
  if (plan.length > 1) return { route: "planned", reason: `the plan has ${plan.length} subtasks` };
  if (only.mapOver !== undefined) return { route: "planned", reason: `its one subtask runs once per item of "${only.mapOver}"` };
  if (only.tool !== undefined) {
    const wording = typeof answer === "string" ? "the plan's answer fills in its result once verified (else the synthesizer words it)" : "the synthesizer words its result";
    return { route: "fast", reason: `one subtask, a direct ${only.tool} call (no worker model): ${wording}` };
  }
  return { route: "fast", reason: "one subtask: its worker is told its result is the answer" };
}

/** Paths compared as the workspace tools name them (`./a/b.txt` and `a/b.txt` are one file). */
function normalPath(file: string): string {
  return path.posix.normalize(file.replaceAll("\\", "/")).replace(/^\.\//, "").replace(/\/$/, "");
}

/** Why a direct step's files are not verified, or undefined: every file it declared is recorded as written (inside a declared folder counts), and every recorded one holds the bytes recorded. */
function unverifiedFiles(subtask: PlannedSubtask, artifacts: readonly Artifact[]): string | undefined {
  for (const artifact of artifacts) {
    const problem = artifactProblem(artifact);
    if (problem) return problem;
  }
  const recorded = artifacts.map((artifact) => normalPath(artifact.path));
  for (const declared of subtask.writes ?? []) {
    const wanted = normalPath(declared);
    if (!recorded.some((file) => file === wanted || file.startsWith(`${wanted}/`))) return `${declared} was declared but no file was recorded there`;
  }
  return undefined;
}

/** Why `auto` keeps the review for this outcome, or undefined when it is a verified direct tool result. */
function reviewNeed(subtask: PlannedSubtask, result: SubtaskResult | undefined, artifacts: readonly Artifact[]): string | undefined {
  const id = subtask.id;
  if (result?.status !== "done") return `${id} is ${result?.status ?? "pending"}`;
  if (isUntrusted(result.provenance)) return `untrusted content: ${id}'s result came from ${describeSources(result.provenance)}`;
  if (subtask.tool === undefined) return `a worker decided ${id}`;
  if (result.map && result.map.failed > 0) return `${result.map.failed} of ${id}'s items failed`;
  if (result.missingFiles) return `${id}: ${result.missingFiles.items} of its items did not leave their files`;
  if ((result.unwritten ?? []).length > 0) return `${id} could not write ${result.unwritten?.map((file) => file.path).join(", ")}`;
  const files = unverifiedFiles(subtask, artifacts);
  return files ? `${id}: ${files}` : undefined;
}

/**
 * Whether the critic reviews this round: always with `always`; never with `never`; with `auto`,
 * skipped only when every outcome is a direct tool result that succeeded, carries nothing
 * untrusted, and whose files are on disk as recorded (`files`: the artifacts as they are now).
 */
export function decideReview(
  state: Pick<State, "plan" | "results" | "reviewDecisions" | "settings">,
  files: Readonly<Record<string, Artifact[]>>,
): ReviewDecision {
  const round = state.reviewDecisions.length + 1;
  const mode: ReviewMode = state.settings.review ?? DEFAULT_REVIEW_MODE;
  if (mode === "always") return { round, review: "ran", reason: "review: always" };
  if (mode === "never") return { round, review: "skipped", reason: "review: never" };
  for (const subtask of state.plan) {
    const need = reviewNeed(subtask, state.results[subtask.id], files[subtask.id] ?? state.results[subtask.id]?.artifacts ?? []);
    if (need) return { round, review: "ran", reason: need };
  }
  return { round, review: "skipped", reason: "every outcome a verified direct tool result" };
}

/**
 * What the answer must say when the review was skipped and work is not done (`review: never`):
 * each subtask that did not finish, so a failure is never worded as a confident answer.
 */
export function unreviewedIssues(state: Pick<State, "plan" | "results" | "reviewDecisions">): string[] {
  if (state.reviewDecisions.at(-1)?.review !== "skipped") return [];
  return state.plan.flatMap((subtask) => {
    const result = state.results[subtask.id];
    if (result?.status === "done") return [];
    return [`${subtask.id} is ${result?.status ?? "pending"}${result?.error ? `: ${result.error}` : ""} (not reviewed)`];
  });
}

/**
 * The fast route's answer: the one worker's result as it submitted it, when that is text (or a
 * single figure) and nothing stands against using it as it is — no output schema to match, no
 * open issue or person's feedback to address, nothing untrusted in it. Otherwise undefined, and
 * the synthesizer writes the answer.
 */
export async function workerAnswer(state: Pick<State, "plan" | "results" | "settings" | "answerFeedback" | "reviews">, stash: Stash): Promise<{ text: string; subtask: PlannedSubtask } | undefined> {
  const only = answeringSubtask(state.plan, state.settings.review);
  if (!only || state.settings.outputSchema || state.answerFeedback.length > 0) return undefined;
  const verdict = state.reviews.at(-1);
  if (verdict && !verdict.passed) return undefined;
  const result = state.results[only.id];
  if (result?.status !== "done" || !result.ref || isUntrusted(result.provenance)) return undefined;
  const value = await stash.get(result.ref).catch(() => undefined);
  if (typeof value === "string") return value.trim().length > 0 ? { text: value, subtask: only } : undefined;
  return typeof value === "number" || typeof value === "boolean" ? { text: String(value), subtask: only } : undefined;
}

export function openIssues(state: Pick<State, "reviews">): string[] {
  const last = state.reviews.at(-1);
  return last && !last.passed ? last.issues : [];
}
