import { fillAnswerTemplate, parseAnswerTemplate, templateRefs } from "../core/answer-template.js";
import { describeSources, isUntrusted, joinLabels } from "../core/provenance.js";
import { selectPath } from "../core/refs.js";
import type { Stash } from "../core/stash.js";
import { statusOf } from "./subtask-status.js";
import type { State } from "./state.js";

/**
 * The answer a plan stated in advance (its answer template), filled by code from the verified
 * results: no synthesizer call. Used only where no model is needed to word the answer — every
 * subtask done, the last review (when one ran) passed, no output schema to match, no person's
 * feedback on an earlier answer, `review` not `always` — and every value it shows readable and
 * small enough to show as it is. A value from untrusted content is shown as it came and the
 * answer says so: it is never read as template syntax (the template is parsed before any value
 * is put in).
 */
export type TemplateAnswer = { text: string; untrusted?: string } | { unused: string };

export async function templateAnswer(state: Pick<State, "plan" | "results" | "settings" | "answerFeedback" | "reviews" | "planAnswer">, stash: Stash): Promise<TemplateAnswer | undefined> {
  const template = state.planAnswer;
  if (!template) return undefined;
  if (state.settings.review === "always") return { unused: "review: always has the synthesizer write every answer" };
  if (state.settings.outputSchema) return { unused: "the run's answer is typed by its output schema" };
  if (state.answerFeedback.length > 0) return { unused: "a person sent the answer back with feedback" };
  const unfinished = state.plan.find((subtask) => statusOf(state.results, subtask.id) !== "done");
  if (unfinished) return { unused: `${unfinished.id} is ${statusOf(state.results, unfinished.id)}` };
  const verdict = state.reviews.at(-1);
  if (verdict && !verdict.passed) return { unused: "the review did not pass" };
  let pieces;
  try {
    pieces = parseAnswerTemplate(template);
  } catch (error) {
    return { unused: `the answer template does not read: ${(error as Error).message}` };
  }
  const ids = templateRefs(pieces);
  const values = new Map<string, unknown>();
  for (const id of ids) {
    const ref = state.results[id]?.ref;
    if (ref === undefined) return { unused: `${id} has no result to show` };
    try {
      values.set(id, await stash.get(ref));
    } catch {
      return { unused: `${id}'s result could not be read` };
    }
  }
  const filled = fillAnswerTemplate(pieces, (id, path) => selectPath(values.get(id), path, id));
  if ("problem" in filled) return { unused: filled.problem };
  const label = joinLabels(...ids.map((id) => state.results[id]?.provenance));
  if (!isUntrusted(label)) return { text: filled.text };
  const sources = describeSources(label);
  const tainted = ids.filter((id) => isUntrusted(state.results[id]?.provenance));
  return { text: `${filled.text}\n\n(Untrusted data: what ${tainted.join(", ")} gave came from ${sources} and is shown as it came, unchecked.)`, untrusted: sources };
}
