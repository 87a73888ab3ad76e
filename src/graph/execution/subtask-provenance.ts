import { isArgRef, type PlannedSubtask } from "../../core/plan.js";
import type { Designation } from "../../core/designation.js";
import { type CallProvenance, joinLabels, type Label, TRUSTED } from "../../core/provenance.js";
import type { LabelledEntry } from "../../core/stash.js";

/**
 * The provenance of a subtask's inputs (src/core/provenance.ts): each argument's label, and how a
 * direct step's call came about. A worker's calls get theirs in the worker loop.
 */

/** Each argument's label: a reference keeps its source's (the whole result's), a literal of the plan is trusted. */
export function argumentLabels(subtask: PlannedSubtask, values: ReadonlyMap<string, LabelledEntry>): Record<string, Label> {
  return Object.fromEntries(Object.entries(subtask.args).map(([name, arg]) => [name, isArgRef(arg) ? (values.get(arg.ref)?.label ?? TRUSTED) : TRUSTED]));
}

/**
 * A direct step's calls: no model chose anything; references carry their sources' labels,
 * literals were written in the plan, and the plan chose the tool. The designation says which
 * private sources the task names (for the egress check: data it names may go where it names).
 */
export function directProvenance(subtask: PlannedSubtask, labels: Readonly<Record<string, Label>>, designation?: Designation): CallProvenance {
  const references: Record<string, Label> = {};
  const literals: string[] = [];
  for (const [name, arg] of Object.entries(subtask.args)) {
    if (isArgRef(arg)) references[name] = labels[name] ?? TRUSTED;
    else literals.push(name);
  }
  return { context: TRUSTED, references, literals, planned: true, ...(designation ? { designation } : {}) };
}

/**
 * A remote agent's subtask: the plan chose the agent, and the message carries the subtask's
 * label (the plan's words) and its arguments, whose labels it takes. A reply to the agent's
 * question carries a person's answer.
 */
export function remoteProvenance(labels: Readonly<Record<string, Label>>, designation: Designation): CallProvenance {
  const carried = joinLabels(...Object.values(labels));
  return { context: TRUSTED, references: { text: carried, data: carried }, literals: [], planned: true, designation };
}
