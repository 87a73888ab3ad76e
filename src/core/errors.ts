/**
 * One base error with a string `code` and structured `data`, and a few kinds.
 * The CLI maps `kind` to an exit code in one place; the HTTP layer maps it to a status.
 */
export type ErrorKind = "input" | "config" | "model" | "tool" | "denied" | "not_found" | "conflict" | "system";

export class TroupeError extends Error {
  readonly code: string;
  readonly kind: ErrorKind;
  readonly data: Record<string, unknown>;

  constructor(kind: ErrorKind, code: string, message: string, data: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = "TroupeError";
    this.kind = kind;
    this.code = code;
    this.data = data;
  }

  toJSON(): { code: string; kind: ErrorKind; message: string; data: Record<string, unknown> } {
    return { code: this.code, kind: this.kind, message: this.message, data: this.data };
  }
}

/** Bad input from a user: a task, a flag, a request body. */
export class InputError extends TroupeError {
  constructor(code: string, message: string, data: Record<string, unknown> = {}) {
    super("input", code, message, data);
    this.name = "InputError";
  }
}

/** Bad or missing configuration: an unknown provider, a missing key, an unwritable directory. */
export class ConfigError extends TroupeError {
  constructor(code: string, message: string, data: Record<string, unknown> = {}) {
    super("config", code, message, data);
    this.name = "ConfigError";
  }
}

/** Something asked for does not exist (a thread, a run, a tool). */
export class NotFoundError extends TroupeError {
  constructor(code: string, message: string, data: Record<string, unknown> = {}) {
    super("not_found", code, message, data);
    this.name = "NotFoundError";
  }
}

/** The request conflicts with the current state (a run already in progress, nothing to resume). */
export class ConflictError extends TroupeError {
  constructor(code: string, message: string, data: Record<string, unknown> = {}) {
    super("conflict", code, message, data);
    this.name = "ConflictError";
  }
}

/** A model misbehaved: invalid structured output after repair, an unexpected reply. */
export class ModelError extends TroupeError {
  /** Every failed attempt of the call, in order (the last one's error is also the `cause`); empty when there were no retries to keep. */
  readonly attempts: ReadonlyArray<{ model: string; attempt: number; reason: string; error: unknown }>;

  constructor(code: string, message: string, data: Record<string, unknown> = {}, options?: ErrorOptions & { attempts?: ModelError["attempts"] }) {
    super("model", code, message, data, options);
    this.name = "ModelError";
    this.attempts = options?.attempts ?? [];
  }
}

/** A tool refused or failed. Tools never throw into the graph; this travels inside a ToolOutcome. */
export class ToolError extends TroupeError {
  constructor(code: string, message: string, data: Record<string, unknown> = {}) {
    super("tool", code, message, data);
    this.name = "ToolError";
  }
}

/** A fault of the system itself (database, filesystem). */
export class SystemError extends TroupeError {
  constructor(code: string, message: string, data: Record<string, unknown> = {}, options?: ErrorOptions) {
    super("system", code, message, data, options);
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
