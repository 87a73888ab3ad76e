import { type CodeOfKind, type ErrorCode, type ErrorKind, errorEntry, type FieldErrorCode } from "./error-codes.js";

export type { ErrorCode, ErrorKind } from "./error-codes.js";

/**
 * One base error with a string `code` and structured `data`. The code is a key of the catalogue
 * (`error-codes.ts`), which gives its kind, HTTP status and exit code; a code missing there does
 * not compile.
 */
export class TroupeError extends Error {
  readonly code: ErrorCode;
  readonly kind: ErrorKind;
  readonly data: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, data: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = "TroupeError";
    this.kind = errorEntry(code).kind;
    this.code = code;
    this.data = data;
  }

  toJSON(): { code: ErrorCode; kind: ErrorKind; message: string; data: Record<string, unknown> } {
    return { code: this.code, kind: this.kind, message: this.message, data: this.data };
  }
}

/** Bad input from a user: a task, a flag, a request body. */
export class InputError extends TroupeError {
  constructor(code: CodeOfKind<"input"> | FieldErrorCode, message: string, data: Record<string, unknown> = {}) {
    super(code, message, data);
    this.name = "InputError";
  }
}

/** Bad or missing configuration: an unknown provider, a missing key, an unwritable directory. */
export class ConfigError extends TroupeError {
  constructor(code: CodeOfKind<"config">, message: string, data: Record<string, unknown> = {}) {
    super(code, message, data);
    this.name = "ConfigError";
  }
}

/** Something asked for does not exist (a thread, a run, a tool). */
export class NotFoundError extends TroupeError {
  constructor(code: CodeOfKind<"not_found">, message: string, data: Record<string, unknown> = {}) {
    super(code, message, data);
    this.name = "NotFoundError";
  }
}

/** The request conflicts with the current state (a run already in progress, nothing to resume). */
export class ConflictError extends TroupeError {
  constructor(code: CodeOfKind<"conflict">, message: string, data: Record<string, unknown> = {}) {
    super(code, message, data);
    this.name = "ConflictError";
  }
}

/** A model misbehaved: invalid structured output after repair, an unexpected reply. */
export class ModelError extends TroupeError {
  /** Every failed attempt of the call, in order (the last one's error is also the `cause`); empty when there were no retries to keep. */
  readonly attempts: ReadonlyArray<{ model: string; attempt: number; reason: string; error: unknown }>;

  constructor(code: CodeOfKind<"model">, message: string, data: Record<string, unknown> = {}, options?: ErrorOptions & { attempts?: ModelError["attempts"] }) {
    super(code, message, data, options);
    this.name = "ModelError";
    this.attempts = options?.attempts ?? [];
  }
}

/** The codes a tool call can fail with: the tool's own, a refusal, or arguments it cannot use. */
export type ToolErrorCode = CodeOfKind<"tool" | "denied" | "input" | "not_found">;

/**
 * A tool refused or failed. Tools never throw into the graph; this travels inside a ToolOutcome.
 * Its kind is its code's: a bad path is the caller's input, a missing grant a denial.
 */
export class ToolError extends TroupeError {
  constructor(code: ToolErrorCode, message: string, data: Record<string, unknown> = {}) {
    super(code, message, data);
    this.name = "ToolError";
  }
}

/** A fault of the system itself (database, filesystem). */
export class SystemError extends TroupeError {
  constructor(code: CodeOfKind<"system">, message: string, data: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(code, message, data, options);
    this.name = "SystemError";
  }
}

export function isTroupeError(value: unknown): value is TroupeError {
  return value instanceof TroupeError;
}

/** The message of anything thrown, without a stack. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
