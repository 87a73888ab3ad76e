import { userInfo } from "node:os";
import type { Command } from "commander";
import { InputError } from "../../core/errors.js";
import { parseAge } from "../../core/retention.js";
import { addEngineFlags, type EngineFlags, openEngine } from "../engine-flags.js";
import { out, printJson } from "../io.js";

interface GrantFlags extends EngineFlags {
  json?: boolean;
  agent?: string;
  tool?: string;
  level?: string;
  expires?: string;
  for?: string;
  conditions?: string;
  reason?: string;
  by?: string;
  all?: boolean;
}

function localUser(): string {
  try {
    return userInfo().username || "operator";
  } catch {
    return "operator";
  }
}

function when(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? "" : new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** `troupe grants list | add | revoke`: runtime grants, kept in the store and audited. */
export function registerGrants(program: Command): void {
  const grants = program.command("grants").description("grants given and revoked while troupe runs: kept in the store (every process applies them to calls that start after), audited");

  const list = grants
    .command("list")
    .description("the grants in force: from the config and the agents' roles, and those given at runtime (with ids)")
    .option("--agent <name>", "only this agent's")
    .option("--all", "include revoked and expired runtime grants")
    .option("--json", "print them as JSON");
  addEngineFlags(list, false).action(async (flags: GrantFlags) => {
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const views = (await troupe.grants.list({ ...(flags.agent ? { agent: flags.agent } : {}), includeRevoked: true })).filter((view) => flags.all || view.live);
      if (flags.json) {
        printJson(views);
        return;
      }
      if (views.length === 0) out("no grants");
      for (const view of views) {
        const { grant } = view;
        const state = view.revokedAt !== null ? `revoked ${when(view.revokedAt)} by ${view.revokedBy}${view.revokeReason ? ` (${view.revokeReason})` : ""}` : !view.live ? "expired" : "";
        const expiry = grant.expiresAt !== undefined ? ` until ${when(grant.expiresAt)}` : "";
        const conditions = grant.conditions ? ` if ${JSON.stringify(grant.conditions)}` : "";
        out(`${(view.id ?? view.source).padEnd(14)} ${grant.agent.padEnd(12)} ${grant.tool.padEnd(20)} ${grant.level.padEnd(8)} by ${grant.grantedBy}${expiry}${conditions}${state ? `  — ${state}` : ""}`);
      }
    } finally {
      await troupe.shutdown();
    }
  });

  const add = grants
    .command("add")
    .description("give an agent a level on a tool (or a pattern: file_*, docs.*), from now on")
    .requiredOption("--agent <name>", "the agent")
    .requiredOption("--tool <name>", "the tool, or a pattern with *")
    .requiredOption("--level <level>", "NONE, READ, WRITE, EXECUTE or ADMIN")
    .option("--expires <time>", "when it ends (ISO 8601: 2030-01-01T00:00:00Z)")
    .option("--for <age>", "how long it lasts: 2h, 30m, 7d")
    .option("--conditions <json>", 'argument constraints and a time window: \'{"args": {"url": {"prefix": "https://api.example.com/"}}}\'')
    .option("--reason <text>", "why (kept with it and in the audit trail)")
    .option("--by <name>", "who gives it (default: the local user)")
    .option("--json", "print the grant as JSON");
  addEngineFlags(add, false).action(async (flags: GrantFlags) => {
    if (flags.expires !== undefined && flags.for !== undefined) throw new InputError("invalid_arguments", "give --expires or --for, not both");
    let conditions: unknown;
    if (flags.conditions !== undefined) {
      try {
        conditions = JSON.parse(flags.conditions) as unknown;
      } catch (error) {
        throw new InputError("invalid_json", `--conditions is not valid JSON: ${(error as Error).message}`);
      }
    }
    const expiresAt = flags.for !== undefined ? Date.now() + parseAge(flags.for, "--for") : flags.expires;
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const grant = await troupe.grants.add(
        { agent: flags.agent as string, tool: flags.tool as string, level: (flags.level ?? "").toUpperCase() as never, ...(conditions !== undefined ? { conditions: conditions as never } : {}), ...(expiresAt !== undefined ? { expiresAt } : {}) },
        { by: flags.by ?? localUser(), ...(flags.reason ? { reason: flags.reason } : {}) },
      );
      if (flags.json) printJson(grant);
      else out(`${grant.id}: ${grant.grant.agent} holds ${grant.grant.level} on ${grant.grant.tool}${grant.grant.expiresAt !== undefined ? ` until ${when(grant.grant.expiresAt)}` : ""} (from calls that start now)`);
    } finally {
      await troupe.shutdown();
    }
  });

  const revoke = grants
    .command("revoke")
    .description("take back a runtime grant: calls that start after it no longer have it, and a denial names it")
    .argument("<id>", "the grant's id (troupe grants list)")
    .option("--reason <text>", "why")
    .option("--by <name>", "who revokes it (default: the local user)")
    .option("--json", "print the grant as JSON");
  addEngineFlags(revoke, false).action(async (id: string, flags: GrantFlags) => {
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const grant = await troupe.grants.revoke(id, { by: flags.by ?? localUser(), ...(flags.reason ? { reason: flags.reason } : {}) });
      if (flags.json) printJson(grant);
      else out(`${grant.id}: revoked ${when(grant.revokedAt)} by ${grant.revokedBy}`);
    } finally {
      await troupe.shutdown();
    }
  });
}
