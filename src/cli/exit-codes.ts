import type { RunResult } from "../core/run.js";
import { type ErrorCode, errorEntry, ERROR_CODES } from "../core/error-codes.js";
import { isTroupeError } from "../core/errors.js";
import { isDamagedDatabase } from "../store/database/errors.js";

/** Exit codes (docs/errors.md): 0 completed · 1 failed · 2 bad input or configuration · 3 waiting for a person. */
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

/** The exit code of an error's code, from the catalogue (`core/error-codes.ts`). */
export function exitCodeForCode(code: ErrorCode): number {
  return errorEntry(code).exit;
}

/**
 * The one place errors become exit codes: each code's, from the catalogue. A database file SQLite
 * finds damaged while a command reads it counts as `database_damaged`: troupe did not break it and
 * cannot mend it.
 */
export function exitCodeForError(error: unknown): number {
  if (isTroupeError(error)) return exitCodeForCode(error.code);
  if (isDamagedDatabase(error)) return ERROR_CODES.database_damaged.exit;
  return EXIT.failed;
}
