import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolError } from "../core/errors.js";
import type { AuditEntry } from "./audit.js";
import { defineTool, type ToolContext } from "./define-tool.js";
import { Grant, PermissionPolicy } from "./permissions.js";
import { ToolRegistry } from "./registry.js";

function collector(): { entries: AuditEntry[]; record: (entry: AuditEntry) => void } {
  const entries: AuditEntry[] = [];
  return { entries, record: (entry) => entries.push(entry) };
}

const context = (agent: string, extra: Partial<ToolContext> = {}): ToolContext => ({ workspace: "/tmp", agent, runId: "run-1", threadId: "t-1", subtaskId: "s1", ...extra });

describe("tool registry", () => {
  it("never runs a denied call, and audits every call: allowed, denied, failed, unknown", async () => {
    let runs = 0;
    const audit = collector();
    const registry = new ToolRegistry({
      audit,
      policy: new PermissionPolicy({ grants: [Grant.parse({ agent: "writer", tool: "write", level: "WRITE" })] }),
    });
    registry.register(
      defineTool({
        name: "write",
        description: "writes",
        schema: z.object({ text: z.string(), api_key: z.string().optional() }),
        permission: "WRITE",
        riskLevel: "low",
        idempotent: false,
        timeoutMs: 1_000,
        async execute({ text }) {
          runs += 1;
          if (text === "boom") throw new ToolError("code_error", "it broke");
          return `wrote ${text}`;
        },
      }),
    );
    expect(await registry.call("write", { text: "a" }, context("reader"))).toMatchObject({ ok: false, error: { code: "permission_denied" } });
    expect(runs).toBe(0);
    expect(await registry.call("write", { text: "a", api_key: "sk-abcdefghijklmnopqrstuvwxyz" }, context("writer"))).toMatchObject({ ok: true, value: "wrote a" });
    expect(await registry.call("write", { text: "boom" }, context("writer"))).toMatchObject({ ok: false, error: { code: "code_error" } });
    expect(await registry.call("write", { nope: 1 }, context("writer"))).toMatchObject({ ok: false, error: { code: "invalid_arguments" } });
    expect(await registry.call("missing", {}, context("writer"))).toMatchObject({ ok: false, error: { code: "unknown_tool" } });
    // A call its caller refuses (a worker's unknown value handle) is audited, unrun; the policy still speaks first.
    const refusal = { code: "unknown_handle" as const, message: '"results.9" is not a handle of this subtask' };
    expect(await registry.call("write", { text: { $stash: "results.9" } }, context("writer"), { refusal })).toEqual({ ok: false, error: refusal });
    expect(await registry.call("write", { text: { $stash: "results.9" } }, context("reader"), { refusal })).toMatchObject({ ok: false, error: { code: "permission_denied" } });
    expect(runs).toBe(2);
    expect(audit.entries.map((entry) => [entry.agent, entry.tool, entry.decision, entry.status, entry.errorCode])).toEqual([
      ["reader", "write", "denied", "not_run", "permission_denied"],
      ["writer", "write", "allowed", "ok", null],
      ["writer", "write", "allowed", "error", "code_error"],
      ["writer", "write", "allowed", "not_run", "invalid_arguments"],
      ["writer", "missing", "denied", "not_run", "unknown_tool"],
      ["writer", "write", "allowed", "not_run", "unknown_handle"],
      ["reader", "write", "denied", "not_run", "permission_denied"],
    ]);
    expect(audit.entries[5]).toMatchObject({ reason: refusal.message, args: '{"text":{"$stash":"results.9"}}', grant: "writer:write:WRITE by config" });
    const allowed = audit.entries[1] as AuditEntry;
    expect(allowed).toMatchObject({ runId: "run-1", threadId: "t-1", subtaskId: "s1", level: "WRITE", resultPreview: "wrote a", attempts: 1 });
    expect(allowed.grant).toBe("writer:write:WRITE by config");
    expect(allowed.args).toBe('{"text":"a","api_key":"[redacted]"}');
  });

  it("retries idempotent tools after transient failures, with backoff, and never retries the others", async () => {
    const attempts = { idempotent: 0, once: 0 };
    const registry = new ToolRegistry({ retryBaseMs: 5 });
    const flaky = (name: "idempotent" | "once", idempotent: boolean) =>
      defineTool({
        name,
        description: name,
        schema: z.object({}),
        permission: "NONE",
        riskLevel: "low",
        idempotent,
        timeoutMs: 1_000,
        async execute() {
          attempts[name] += 1;
          if (attempts[name] < 3) throw new ToolError("fetch_failed", "try again", { retryable: true });
          return "finally";
        },
      });
    registry.register(flaky("idempotent", true)).register(flaky("once", false));
    expect(await registry.call("idempotent", {}, context("x"))).toMatchObject({ ok: true, value: "finally" });
    expect(attempts.idempotent).toBe(3);
    expect(await registry.call("once", {}, context("x"))).toMatchObject({ ok: false, error: { code: "fetch_failed" } });
    expect(attempts.once).toBe(1);
  });

  it("does not retry an error that a retry cannot fix", async () => {
    let runs = 0;
    const registry = new ToolRegistry({ retryBaseMs: 1 });
    registry.register(
      defineTool({ name: "strict", description: "s", schema: z.object({}), permission: "NONE", riskLevel: "low", idempotent: true, timeoutMs: 1_000, async execute() {
        runs += 1;
        throw new ToolError("not_found", "no such thing");
      } }),
    );
    await registry.call("strict", {}, context("x"));
    expect(runs).toBe(1);
  });

  it("serves idempotent results from the cache within their TTL", async () => {
    let runs = 0;
    const audit = collector();
    const registry = new ToolRegistry({ audit });
    registry.register(
      defineTool({
        name: "lookup",
        description: "l",
        schema: z.object({ q: z.string() }),
        permission: "NONE",
        riskLevel: "low",
        idempotent: true,
        cacheTtlMs: 60_000,
        timeoutMs: 1_000,
        async execute({ q }) {
          runs += 1;
          return q.toUpperCase();
        },
      }),
    );
    await registry.call("lookup", { q: "a" }, context("x"));
    expect(await registry.call("lookup", { q: "a" }, context("y"))).toMatchObject({ ok: true, value: "A" });
    await registry.call("lookup", { q: "b" }, context("x"));
    expect(runs).toBe(2);
    expect(audit.entries.map((entry) => entry.cached)).toEqual([false, true, false]);
  });

  it("runs at most `concurrency` calls at once", async () => {
    let active = 0;
    let peak = 0;
    const registry = new ToolRegistry({ concurrency: 3 });
    registry.register(
      defineTool({ name: "slow", description: "s", schema: z.object({}), permission: "NONE", riskLevel: "low", idempotent: false, timeoutMs: 5_000, async execute() {
        active += 1;
        peak = Math.max(peak, active);
        await new Promise((resolve) => setTimeout(resolve, 20));
        active -= 1;
        return "done";
      } }),
    );
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => registry.call("slow", {}, context("x"))));
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect(peak).toBe(3);
  });

  it("times out a call without throwing, and reports it", async () => {
    const registry = new ToolRegistry({ retryBaseMs: 1 });
    registry.register(
      defineTool({ name: "stuck", description: "s", schema: z.object({}), permission: "NONE", riskLevel: "low", idempotent: false, timeoutMs: 50, execute: () => new Promise(() => undefined) }),
    );
    expect(await registry.call("stuck", {}, context("x"))).toEqual({ ok: false, error: { code: "timeout", message: "stuck did not finish within 50 ms" } });
  });

  it("asks a person before a high-risk call, and runs it only when approved", async () => {
    let runs = 0;
    const audit = collector();
    const registry = new ToolRegistry({ audit, policy: new PermissionPolicy({ grants: [Grant.parse({ agent: "code", tool: "*", level: "ADMIN" })] }) });
    registry.register(
      defineTool({ name: "wipe", description: "w", schema: z.object({ token: z.string() }), permission: "WRITE", riskLevel: "high", idempotent: false, timeoutMs: 1_000, async execute() {
        runs += 1;
        return "wiped";
      } }),
    );
    const asked: unknown[] = [];
    expect(await registry.call("wipe", { token: "hunter2" }, context("code"))).toMatchObject({ ok: false, error: { code: "approval_required" } });
    expect(
      await registry.call("wipe", { token: "hunter2" }, context("code", { requestApproval: (request) => (asked.push(request), { approved: false, feedback: "not today" }) })),
    ).toMatchObject({ ok: false, error: { code: "rejected", message: "a person rejected this call to wipe: not today" } });
    expect(runs).toBe(0);
    expect(await registry.call("wipe", { token: "hunter2" }, context("code", { requestApproval: () => ({ approved: true }) }))).toMatchObject({ ok: true });
    expect(runs).toBe(1);
    expect(asked[0]).toMatchObject({ tool: "wipe", agent: "code", riskLevel: "high", args: { token: "[redacted]" }, subtaskId: "s1" });
    expect(audit.entries.map((entry) => [entry.decision, entry.status])).toEqual([
      ["denied", "not_run"],
      ["rejected", "not_run"],
      ["approved", "ok"],
    ]);
    // A pause (the approval callback throwing) passes through, and nothing is recorded for it.
    const pause = new Error("paused");
    await expect(registry.call("wipe", { token: "x" }, context("code", { requestApproval: () => { throw pause; } }))).rejects.toBe(pause);
    expect(audit.entries).toHaveLength(3);
    expect(runs).toBe(1);
  });

  it("refuses a value larger than the tool's cap with result_too_large, and audits it", async () => {
    const audit = collector();
    const registry = new ToolRegistry({ audit });
    const tool = (name: string, maxResultBytes?: number) =>
      defineTool({
        name,
        description: "returns what it is told",
        schema: z.object({ size: z.number() }),
        permission: "NONE",
        riskLevel: "low",
        idempotent: true,
        timeoutMs: 1_000,
        ...(maxResultBytes ? { maxResultBytes } : {}),
        async execute({ size }) {
          return { items: Array.from({ length: size }, (_, index) => ({ index, text: "ü".repeat(10) })) };
        },
      });
    registry.register(tool("capped", 10_000)).register(tool("plain"));
    expect(await registry.call("capped", { size: 10 }, context("a"))).toMatchObject({ ok: true });
    const refused = await registry.call("capped", { size: 1_000 }, context("a"));
    expect(refused).toEqual({ ok: false, error: { code: "result_too_large", message: "capped returned more than its 10000-byte cap on results; ask for less (a smaller range, a limit) or write it to a file" } });
    // The default cap is 16 MiB: half a million items of about 40 bytes pass it.
    expect(await registry.call("plain", { size: 600_000 }, context("a"))).toMatchObject({ ok: false, error: { code: "result_too_large", message: expect.stringContaining("16777216-byte cap") } });
    expect(audit.entries.map((entry) => [entry.tool, entry.status, entry.errorCode])).toEqual([
      ["capped", "ok", null],
      ["capped", "error", "result_too_large"],
      ["plain", "error", "result_too_large"],
    ]);
  });
});
