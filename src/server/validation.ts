import type { z } from "zod";
import { type CodeOfKind, fieldErrorCode, type FieldErrorCode, isCodeOfKind } from "../core/error-codes.js";
import { InputError } from "../core/errors.js";

type Issue = z.core.$ZodIssue;

/** Whether the request part has a value at the issue's path (zod does not report the input). */
function present(input: unknown, path: readonly PropertyKey[]): boolean {
  let current: unknown = input;
  for (const key of path) {
    if (current === null || typeof current !== "object" || !(key in current)) return false;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current !== undefined;
}

/** A request part's problem as a stable code: `<field>_<problem>`, or `unknown_field`. */
export function issueCode(issue: Issue, input: unknown): CodeOfKind<"input"> | FieldErrorCode {
  const field = issue.path.length > 0 ? String(issue.path[0]) : undefined;
  if (issue.code === "unrecognized_keys") return "unknown_field";
  if (issue.code === "custom" && isCodeOfKind(issue.params?.code, "input")) return issue.params.code;
  if (field === undefined) return "invalid_body";
  if (!present(input, issue.path.slice(0, 1))) return fieldErrorCode(field, "required");
  // A problem inside a field (an item of a list, a key of an object) makes the field invalid.
  if (issue.path.length > 1) return fieldErrorCode(field, "invalid");
  switch (issue.code) {
    case "too_small":
      if (issue.origin === "string") return Number(issue.minimum) <= 1 ? fieldErrorCode(field, "empty") : fieldErrorCode(field, "too_short");
      if (issue.origin === "array" || issue.origin === "set") return fieldErrorCode(field, "too_few");
      return fieldErrorCode(field, "out_of_range");
    case "too_big":
      if (issue.origin === "string") return fieldErrorCode(field, "too_long");
      if (issue.origin === "array" || issue.origin === "set") return fieldErrorCode(field, "too_many");
      return fieldErrorCode(field, "out_of_range");
    default:
      return fieldErrorCode(field, "invalid");
  }
}

function describe(issue: Issue): string {
  if (issue.code === "unrecognized_keys") return `unknown field${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.join(", ")}`;
  const where = issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : "";
  return `${where}${issue.message}`;
}

/**
 * Parses a request part (body, query, params) with its schema. The first problem decides the
 * error code; every problem is listed in `data.issues`.
 */
export function parseRequestPart<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  // Unknown fields come first: a request of the wrong shape is that before anything else.
  const issues = [...parsed.error.issues].sort((a, b) => Number(b.code === "unrecognized_keys") - Number(a.code === "unrecognized_keys"));
  const first = issues[0] as Issue;
  const data: Record<string, unknown> = {
    issues: issues.map((issue) => ({ path: issue.path.map(String).join("."), code: issueCode(issue, value), message: describe(issue) })),
  };
  if (first.path.length > 0) data.field = String(first.path[0]);
  if (first.code === "unrecognized_keys") data.fields = first.keys;
  throw new InputError(issueCode(first, value), describe(first), data);
}
