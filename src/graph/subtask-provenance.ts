import { isArgRef, type PlannedSubtask } from "../core/plan.js";
import { type CallProvenance, type Label, TRUSTED } from "../core/provenance.js";
import type { LabelledEntry } from "../core/stash.js";

/**
 * The provenance of a subtask's inputs (src/core/provenance.ts): each argument's label, and how a
 * direct step's call came about. A worker's calls get theirs in the worker loop.
 */

/** Each argument's label: a reference keeps its source's (the whole result's), a literal of the plan is trusted. */
export function argumentLabels(subtask: PlannedSubtask, values: ReadonlyMap<string, LabelledEntry>): Record<string, Label> {
  return Object.fromEntries(Object.entries(subtask.args).map(([name, arg]) => [name, isArgRef(arg) ? (values.get(arg.ref)?.label ?? TRUSTED) : TRUSTED]));
}

/** A direct step's calls: no model chose anything; references carry their sources' labels, literals were written in the plan. */
export function directProvenance(subtask: PlannedSubtask, labels: Readonly<Record<string, Label>>): CallProvenance {
  const references: Record<string, Label> = {};
  const literals: string[] = [];
  for (const [name, arg] of Object.entries(subtask.args)) {
    if (isArgRef(arg)) references[name] = labels[name] ?? TRUSTED;
    else literals.push(name);
  }
  return { context: TRUSTED, references, literals };
}
