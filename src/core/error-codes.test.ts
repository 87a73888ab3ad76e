import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { renderErrorsPage } from "./error-docs.js";
import { type CatalogueCode, ERROR_CODES, errorEntry, fieldErrorCode, isCatalogueCode, KIND_DEFAULTS } from "./error-codes.js";
import { ConfigError, InputError, ToolError, TroupeError } from "./errors.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const entries = Object.entries(ERROR_CODES) as [CatalogueCode, (typeof ERROR_CODES)[CatalogueCode]][];

/** The statuses a code had of its own before the catalogue (the error handler's table); every other code answers with its kind's. */
const OWN_STATUSES: Partial<Record<CatalogueCode, number>> = {
  unauthorized: 401,
  invalid_api_key: 401,
  rate_limited: 429,
  // A request whose Host names another server (DNS rebinding): Misdirected Request.
  host_not_allowed: 421,
  overloaded: 503,
  shutting_down: 503,
  not_ready: 503,
  database_unavailable: 503,
  body_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  // The Agent Protocol: what troupe does not do, and a command that cannot be carried out as sent, are Unprocessable (as LangGraph's servers answer).
  agent_protocol_unsupported: 422,
  command_invalid: 422,
  timeout: 504,
};

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const full = path.join(directory, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [full] : [];
  });
}

describe("the error catalogue", () => {
  it("gives every code a kind, an HTTP error status, the kind's exit code and a one-line remedy", () => {
    expect(entries.length).toBeGreaterThan(200);
    for (const [code, entry] of entries) {
      expect(code, code).toMatch(/^[a-z][a-z0-9_]*[a-z0-9]$/);
      expect(Object.keys(KIND_DEFAULTS), code).toContain(entry.kind);
      expect(Number.isInteger(entry.status) && entry.status >= 400 && entry.status <= 599, `${code}: ${entry.status}`).toBe(true);
      // Exit codes follow the kind: the caller's or the configuration's fault is 2, the rest 1 (3 is a waiting run, never an error).
      expect(entry.exit, code).toBe(KIND_DEFAULTS[entry.kind].exit);
      expect(entry.remedy.trim().length, code).toBeGreaterThan(10);
      expect(entry.remedy, code).not.toMatch(/\n/);
      expect(entry.remedy, code).toMatch(/[.)]$/);
    }
  });

  it("keeps the statuses the server answered with before: the kind's, and a few codes' own", () => {
    for (const [code, entry] of entries) expect([code, entry.status]).toEqual([code, OWN_STATUSES[code] ?? KIND_DEFAULTS[entry.kind].status]);
  });

  it("derives an error's kind from its code, and a request field's code from the field", () => {
    expect(new TroupeError("thread_busy", "busy")).toMatchObject({ kind: "conflict", code: "thread_busy" });
    expect(new ToolError("permission_denied", "no grant").kind).toBe("denied");
    expect(new ToolError("invalid_path", "empty").kind).toBe("input");
    const field = new InputError(fieldErrorCode("task", "required"), "task: required");
    expect([field.code, field.kind, errorEntry(field.code).status, errorEntry(field.code).exit]).toEqual(["task_required", "input", 400, 2]);
    expect(isCatalogueCode("toString")).toBe(false);
    expect(isCatalogueCode("thread_busy")).toBe(true);
  });

  it("refuses, at compile time, a code it does not list or a code of another kind", () => {
    // These lines are checked by `npm run typecheck`; each must fail to compile for the test to pass it.
    // @ts-expect-error a code missing from the catalogue
    expect(new TroupeError("typo_code", "x").kind).toBe("system");
    // @ts-expect-error a configuration code is not an input error
    expect(new InputError("database_damaged", "x").kind).toBe("config");
    // @ts-expect-error an input code is not a configuration error
    expect(new ConfigError("invalid_json", "x").kind).toBe("input");
    // @ts-expect-error a field code is made by fieldErrorCode, not written by hand
    expect(new InputError("task_requird", "x").kind).toBe("system");
  });

  it("lists every code a module of src/ throws or returns in a failed tool call", () => {
    // Codes of other systems that appear in the same shapes: Node's errno, zod's issue codes, a fake provider's.
    const foreign = new Set(["EFBIG", "ENOTFOUND", "ENOTREG", "EISDIR", "custom", "ok", "context_length_exceeded", "linearRegExp", "code"]);
    const pattern = /new [A-Za-z]*Error\(\s*"([a-z_A-Z]+)"|\bcode: "([^"]+)"|\bcode === "([a-z_]+)" \? code/g;
    const missing: string[] = [];
    const seen = new Set<string>();
    for (const file of sourceFiles(path.join(ROOT, "src"))) {
      if (file.includes(`${path.sep}testing${path.sep}`) || file.endsWith("error-codes.ts")) continue;
      for (const match of readFileSync(file, "utf8").matchAll(pattern)) {
        const code = match[1] ?? match[2] ?? match[3] ?? "";
        const isErrorKindArgument = match[1] !== undefined && match[0].startsWith("new Error");
        if (isErrorKindArgument || foreign.has(code)) continue;
        seen.add(code);
        if (isCatalogueCode(code)) continue;
        missing.push(`${path.relative(ROOT, file)}: ${code}`);
      }
    }
    expect(missing).toEqual([]);
    // The scan finds most of the catalogue itself (the rest come through tables and variables the types check).
    expect(seen.size).toBeGreaterThan(180);
  });

  it("is what docs/errors.md says (npm run docs:errors writes it)", () => {
    const page = readFileSync(path.join(ROOT, "docs/errors.md"), "utf8");
    expect(page, "docs/errors.md is out of date: run npm run docs:errors").toBe(renderErrorsPage());
    for (const [code] of entries) expect(page).toContain(`| \`${code}\` |`);
  });
});
