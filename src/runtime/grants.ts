import { z } from "zod";
import type { AgentRegistry } from "../agents/define-agent.js";
import { InputError, NotFoundError } from "../core/errors.js";
import type { Store } from "../store/index.js";
import { auditArgs } from "../tools/audit.js";
import { Grant, type GrantInput, type PermissionPolicy } from "../tools/permissions.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { RuntimeGrant, RuntimeGrantSource } from "../tools/permissions.js";

/** The tool name a grant change is audited under. */
export const GRANTS_AUDIT_TOOL = "troupe.grants";

/** A grant as `troupe grants list` shows it: given at runtime (with its id), or in force from the config and the agents' roles. */
export interface GrantView {
  id: string | null;
  source: "runtime" | "config" | "role";
  grant: Grant;
  createdAt: number | null;
  reason: string | null;
  revokedAt: number | null;
  revokedBy: string | null;
  revokeReason: string | null;
  /** In force now: not revoked and not expired. */
  live: boolean;
}

/**
 * Grants given and taken back while troupe runs, over the store (so every process applies them),
 * and the registry's source of them: read before every call (a version check, the list again
 * only when it changed), so a change applies to every call that starts after it. Every change is
 * written to the audit trail (tool `troupe.grants`, decision granted or revoked, by whom).
 */
export class RuntimeGrants implements RuntimeGrantSource {
  readonly #store: Store;
  readonly #agents: AgentRegistry;
  readonly #tools: ToolRegistry;
  readonly #policy: PermissionPolicy;
  #cache: { version: string; grants: readonly RuntimeGrant[] } | undefined;

  constructor(parts: { store: Store; agents: AgentRegistry; tools: ToolRegistry; policy: PermissionPolicy }) {
    this.#store = parts.store;
    this.#agents = parts.agents;
    this.#tools = parts.tools;
    this.#policy = parts.policy;
  }

  async current(): Promise<readonly RuntimeGrant[]> {
    const version = await this.#store.grants.version();
    if (this.#cache?.version === version) return this.#cache.grants;
    const grants = await this.#store.grants.list();
    this.#cache = { version, grants };
    return grants;
  }

  /** Gives a grant: the agent and the tool (or a pattern) must exist, an expiry must be ahead. */
  async add(input: Omit<GrantInput, "grantedBy">, options: { by: string; reason?: string }): Promise<RuntimeGrant> {
    const parsed = Grant.safeParse({ ...input, grantedBy: options.by });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InputError("invalid_grant", `${issue?.path.join(".") || "grant"}: ${issue?.message ?? "invalid"}`, { path: issue?.path.join(".") });
    }
    const grant = parsed.data;
    if (grant.agent !== "*" && !this.#agents.get(grant.agent)) throw new InputError("unknown_agent", `unknown agent "${grant.agent}"; agents: ${this.#agents.names().join(", ")}`, { agent: grant.agent });
    if (!grant.tool.includes("*") && !this.#tools.has(grant.tool)) throw new InputError("unknown_tool", `unknown tool "${grant.tool}" (a pattern with * may name tools not there yet)`, { tool: grant.tool });
    if (grant.expiresAt !== undefined && !(grant.expiresAt > Date.now())) throw new InputError("invalid_grant", "expiresAt: the expiry is already past", { path: "expiresAt" });
    const added = await this.#store.grants.add(grant, options.reason);
    this.#cache = undefined;
    await this.#audit(added, "granted", options.by, options.reason ?? null);
    return added;
  }

  /** Takes a grant back; calls that start after it no longer have it. */
  async revoke(id: string, options: { by: string; reason?: string }): Promise<RuntimeGrant> {
    const before = await this.#store.grants.get(id);
    if (!before) throw new NotFoundError("grant_not_found", `no grant ${id} (troupe grants list shows their ids; grants from the config file are changed there)`, { id });
    if (before.revokedAt !== null) return before;
    const revoked = (await this.#store.grants.revoke(id, options.by, options.reason)) as RuntimeGrant;
    this.#cache = undefined;
    await this.#audit(revoked, "revoked", options.by, options.reason ?? null);
    return revoked;
  }

  /** Every grant: the runtime ones (revoked ones too, unless asked not to) and those of the config and roles. */
  async list(options: { agent?: string; includeRevoked?: boolean } = {}): Promise<GrantView[]> {
    const now = Date.now();
    const alive = (grant: Grant): boolean => grant.expiresAt === undefined || grant.expiresAt > now;
    const runtime = (await this.#store.grants.list(options)).map(
      (item): GrantView => ({ id: item.id, source: "runtime", grant: item.grant, createdAt: item.createdAt, reason: item.reason, revokedAt: item.revokedAt, revokedBy: item.revokedBy, revokeReason: item.revokeReason, live: item.revokedAt === null && alive(item.grant) }),
    );
    const runtimeGrants = new Set(runtime.map((view) => view.grant));
    const fixed = this.#policy
      .grants(options.agent)
      .filter((grant) => !runtimeGrants.has(grant) && (options.agent === undefined || grant.agent === options.agent))
      .map(
        (grant): GrantView => ({
          id: null,
          source: grant.grantedBy.startsWith("role:") ? "role" : "config",
          grant,
          createdAt: null,
          reason: null,
          revokedAt: null,
          revokedBy: null,
          revokeReason: null,
          live: alive(grant),
        }),
      );
    return [...fixed, ...runtime];
  }

  async #audit(grant: RuntimeGrant, decision: "granted" | "revoked", by: string, reason: string | null): Promise<void> {
    await this.#store.audit.record({
      at: Date.now(),
      runId: null,
      threadId: null,
      subtaskId: null,
      agent: grant.grant.agent,
      principal: by,
      tool: GRANTS_AUDIT_TOOL,
      args: auditArgs({ id: grant.id, tool: grant.grant.tool, level: grant.grant.level, ...(grant.grant.conditions ? { conditions: grant.grant.conditions } : {}), ...(grant.grant.expiresAt !== undefined ? { expiresAt: new Date(grant.grant.expiresAt).toISOString() } : {}) }),
      decision,
      status: "ok",
      level: grant.grant.level,
      grant: `${grant.id}: ${grant.grant.agent}:${grant.grant.tool}:${grant.grant.level}`,
      reason,
      resultPreview: null,
      errorCode: null,
      error: null,
      durationMs: 0,
      attempts: 0,
      cached: false,
    });
  }
}

/** A grant as given on the command line or over HTTP: the agent, the tool, the level, and optionally conditions, an expiry and a reason. */
export const GrantRequest = z
  .object({
    agent: z.string().min(1).max(64),
    tool: z.string().min(1).max(128),
    level: z.enum(["NONE", "READ", "WRITE", "EXECUTE", "ADMIN"]),
    conditions: z.unknown().optional(),
    expiresAt: z.union([z.string(), z.number()]).optional(),
    reason: z.string().max(500).optional(),
  })
  .strict();
export type GrantRequest = z.infer<typeof GrantRequest>;
