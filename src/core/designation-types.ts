// The shapes of a designation, apart from the code that builds one (designation.ts, which reads
// the plan) so that a provenance label, which the plan itself holds, can carry one.

/**
 * What the trusted instructions designate for one subtask: the task and the subtask's label (the
 * planner wrote it from the task alone), the values the plan gave it (literals, and trusted
 * values it passed by reference), the paths it declares it writes and the tools it was given.
 * A worker that has read untrusted content may still act on a target these name — the person
 * or the plan chose it — but not on one it found in that content.
 */
export interface Designation {
  /** Trusted instruction text: the task, the subtask's label, a person's answers. */
  texts: readonly string[];
  /** Values the plan gave the subtask, as text (string leaves of its literals and of trusted referenced values). */
  values: ReadonlySet<string>;
  /** The same values as workspace paths (normalised) and as names (spaces collapsed, lower case), for matching. */
  paths: ReadonlySet<string>;
  names: ReadonlySet<string>;
  /** Workspace paths the plan says the subtask creates, changes or deletes ([] when it declares none). */
  writes: readonly string[];
  /** The tools the plan gave the subtask; null when it may use any of its agent's. */
  tools: readonly string[] | null;
  /**
   * Paths the plan passed the subtask by reference from untrusted data (a listing's entries, a
   * map's item), normalised: one inside a folder the task names is the plan's own choice ("run
   * each file in scripts/"), whichever file the data made it.
   */
  passed?: ReadonlySet<string>;
}

/** What kind of value a target argument holds, which says how it can be matched against the instructions. */
export type TargetKind = "path" | "url" | "code" | "name";
