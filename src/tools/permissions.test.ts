import { describe, expect, it } from "vitest";
import { Grant, inTimeWindow, matchesPattern, OPERATOR, PermissionPolicy } from "./permissions.js";

const tool = (name: string, riskLevel: "low" | "medium" | "high" = "low") => ({ name, riskLevel });

describe("permission policy", () => {
  it("denies by default and allows what a grant covers, at its level or below", () => {
    const policy = new PermissionPolicy({ grants: [Grant.parse({ agent: "research", tool: "file_*", level: "READ" })] });
    expect(policy.check("research", tool("file_read"), "READ", {})).toMatchObject({ allowed: true, grant: { tool: "file_*" } });
    expect(policy.check("research", tool("file_write"), "WRITE", {})).toMatchObject({ allowed: false, code: "permission_denied", reason: "research holds READ on file_write, which needs WRITE" });
    expect(policy.check("code", tool("file_read"), "READ", {})).toMatchObject({ allowed: false, code: "permission_denied", reason: "code has no grant for file_read (it needs READ)" });
    // Tools that need nothing (the default level) are open to every agent.
    expect(policy.check("code", tool("calculator"), "NONE", {})).toMatchObject({ allowed: true });
    expect(policy.check(undefined, tool("calculator"), "NONE", {})).toMatchObject({ allowed: false, code: "no_agent" });
  });

  it("lets the operator do anything without approval, and asks approval for high-risk tools and configured ones", () => {
    const policy = new PermissionPolicy({
      grants: [Grant.parse({ agent: "code", tool: "*", level: "ADMIN" })],
      approval: { tools: ["code_run"], riskLevels: ["high"] },
    });
    expect(policy.check(OPERATOR, tool("file_delete", "high"), "WRITE", {})).toMatchObject({ allowed: true, needsApproval: false });
    expect(policy.check("code", tool("file_delete", "high"), "WRITE", {})).toMatchObject({ allowed: true, needsApproval: true });
    expect(policy.check("code", tool("code_run", "medium"), "EXECUTE", {})).toMatchObject({ allowed: true, needsApproval: true });
    expect(policy.check("code", tool("file_read"), "READ", {})).toMatchObject({ allowed: true, needsApproval: false });
  });

  it("ignores expired grants and says so", () => {
    const now = new Date("2030-01-01T12:00:00Z");
    const policy = new PermissionPolicy({
      grants: [
        Grant.parse({ agent: "execute", tool: "http_fetch", level: "READ", expiresAt: "2029-12-31T00:00:00Z", grantedBy: "alice" }),
        Grant.parse({ agent: "execute", tool: "web_search", level: "READ", expiresAt: "2030-01-02T00:00:00Z" }),
      ],
    });
    expect(policy.check("execute", tool("http_fetch"), "READ", {}, now)).toMatchObject({ allowed: false, code: "grant_expired" });
    expect(policy.check("execute", tool("web_search"), "READ", {}, now)).toMatchObject({ allowed: true });
    expect(policy.reachable("execute", [{ name: "http_fetch", permission: "READ", riskLevel: "low" }, { name: "web_search", permission: "READ", riskLevel: "low" }], now)).toEqual(["web_search"]);
  });

  it("checks argument constraints", () => {
    const policy = new PermissionPolicy({
      grants: [
        Grant.parse({
          agent: "execute",
          tool: "file_write",
          level: "WRITE",
          conditions: { args: { path: { prefix: "reports/", maxLength: 40 }, overwrite: { equals: false } } },
        }),
        Grant.parse({ agent: "execute", tool: "http_fetch", level: "WRITE", conditions: { args: { url: { pattern: "^https://api\\.example\\.com/" }, method: { oneOf: ["GET", "POST"] } } } }),
        Grant.parse({ agent: "execute", tool: "code_run", level: "EXECUTE", conditions: { args: { timeoutMs: { max: 5000 } } } }),
      ],
    });
    expect(policy.check("execute", tool("file_write"), "WRITE", { path: "reports/a.md", overwrite: false })).toMatchObject({ allowed: true });
    expect(policy.check("execute", tool("file_write"), "WRITE", { path: "secrets/a.md", overwrite: false })).toMatchObject({
      allowed: false,
      code: "condition_failed",
      reason: "execute's grant for file_write does not cover this call: path must start with reports/",
    });
    expect(policy.check("execute", tool("file_write"), "WRITE", { path: "reports/a.md", overwrite: true })).toMatchObject({ allowed: false, code: "condition_failed" });
    expect(policy.check("execute", tool("http_fetch"), "WRITE", { url: "https://api.example.com/v1", method: "POST" })).toMatchObject({ allowed: true });
    expect(policy.check("execute", tool("http_fetch"), "WRITE", { url: "https://evil.example/", method: "POST" })).toMatchObject({ allowed: false, code: "condition_failed" });
    expect(policy.check("execute", tool("code_run"), "EXECUTE", { timeoutMs: 9000 })).toMatchObject({ allowed: false, reason: expect.stringContaining("timeoutMs must be at most 5000") });
  });

  it("checks time windows in their time zone, overnight windows included", () => {
    const office = { start: "09:00", end: "18:00", days: ["mon", "tue", "wed", "thu", "fri"] as Array<"mon" | "tue" | "wed" | "thu" | "fri">, timezone: "Europe/Paris" };
    expect(inTimeWindow(office, new Date("2030-01-07T10:00:00Z"))).toBe(true); // Monday 11:00 in Paris
    expect(inTimeWindow(office, new Date("2030-01-07T17:30:00Z"))).toBe(false); // 18:30 in Paris
    expect(inTimeWindow(office, new Date("2030-01-05T10:00:00Z"))).toBe(false); // Saturday
    const night = { start: "22:00", end: "06:00", days: ["fri" as const], timezone: "UTC" };
    expect(inTimeWindow(night, new Date("2030-01-04T23:00:00Z"))).toBe(true); // Friday 23:00
    expect(inTimeWindow(night, new Date("2030-01-05T05:00:00Z"))).toBe(true); // Saturday 05:00, Friday's night
    expect(inTimeWindow(night, new Date("2030-01-05T23:00:00Z"))).toBe(false); // Saturday 23:00
    const policy = new PermissionPolicy({ grants: [Grant.parse({ agent: "code", tool: "code_run", level: "EXECUTE", conditions: { timeWindow: office } })] });
    expect(policy.check("code", tool("code_run"), "EXECUTE", {}, new Date("2030-01-05T10:00:00Z"))).toMatchObject({
      allowed: false,
      code: "condition_failed",
      reason: expect.stringContaining("outside the permitted hours 09:00-18:00"),
    });
  });

  it("grants and revokes at run time, and rejects malformed grants", () => {
    const policy = new PermissionPolicy();
    policy.grant({ agent: "code", tool: "http_fetch", level: "READ", grantedBy: "bob" });
    expect(policy.check("code", tool("http_fetch"), "READ", {})).toMatchObject({ allowed: true, grant: { grantedBy: "bob" } });
    expect(policy.revoke("code", "http_fetch")).toBe(1);
    expect(policy.check("code", tool("http_fetch"), "READ", {})).toMatchObject({ allowed: false });
    expect(() => policy.grant({ agent: "code", tool: "x", level: "ROOT" as never })).toThrow();
    expect(() => Grant.parse({ agent: "code", tool: "x", level: "READ", conditions: { timeWindow: { start: "25:00", end: "10:00" } } })).toThrow(/HH:MM/);
    expect(matchesPattern("docs.*", "docs.search")).toBe(true);
    expect(matchesPattern("docs.*", "docsXsearch")).toBe(false);
  });
});
