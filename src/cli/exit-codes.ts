import type { RunResult } from "../core/run.js";
import { isTroupeError } from "../core/errors.js";
import { isDamagedDatabase } from "../store/database/errors.js";

/** Exit codes (DESIGN.md): 0 completed · 1 failed · 2 bad input or configuration · 3 waiting for a person. */
export const EXIT = {
  completed: 0,
  failed: 1,
  badInput: 2,
  interrupted: 3,
  cancelled: 130,
} as const;

export function exitCodeForResult(result: Pick<RunResult, "status">): number {
  switch (result.status) {
    case "completed":
      return EXIT.completed;
    case "interrupted":
      return EXIT.interrupted;
    case "cancelled":
      return EXIT.cancelled;
    default:
      return EXIT.failed;
  }
}

/**
 * The one place errors become exit codes: the user's or configuration's fault is 2, the rest 1.
 * A database file SQLite finds damaged (found while a command reads it) is the configuration's:
 * troupe did not break it and cannot mend it.
 */
export function exitCodeForError(error: unknown): number {
  if (isTroupeError(error)) {
    return error.kind === "input" || error.kind === "config" || error.kind === "not_found" || error.kind === "conflict" ? EXIT.badInput : EXIT.failed;
  }
  if (isDamagedDatabase(error)) return EXIT.badInput;
  return EXIT.failed;
}
