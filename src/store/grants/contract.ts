import { randomBytes } from "node:crypto";
import { z } from "zod";
import { Grant } from "../../tools/permissions.js";
import type { RuntimeGrant } from "../../tools/permissions.js";

/**
 * Runtime grants (`troupe grants`, `/api/v1/grants`): added and revoked while troupe runs, kept
 * in the store so every process sharing it applies them. A revoked grant keeps its row (who
 * revoked it, when, why), so a denial can name it. `version` changes with every add and revoke:
 * readers cache the list and read it again only when it changed.
 */
export interface GrantStore {
  add(grant: Grant, reason?: string): Promise<RuntimeGrant>;
  /** Revokes a grant; undefined when there is no such grant. A grant already revoked is returned as it is. */
  revoke(id: string, by: string, reason?: string): Promise<RuntimeGrant | undefined>;
  get(id: string): Promise<RuntimeGrant | undefined>;
  /** Grants, oldest first: every one, or only those not revoked. */
  list(options?: { agent?: string; includeRevoked?: boolean }): Promise<RuntimeGrant[]>;
  /** Changes whenever a grant is added or revoked. */
  version(): Promise<string>;
}

/** A stored grant row (either database). */
export const GrantRow = z
  .object({
    id: z.string(),
    agent: z.string(),
    tool: z.string(),
    level: z.string(),
    conditions: z.string().nullable(),
    expires_at: z.number().nullable(),
    granted_by: z.string(),
    reason: z.string().nullable(),
    created_at: z.number(),
    revoked_at: z.number().nullable(),
    revoked_by: z.string().nullable(),
    revoke_reason: z.string().nullable(),
  })
  .transform(
    (row): RuntimeGrant => ({
      id: row.id,
      grant: Grant.parse({
        agent: row.agent,
        tool: row.tool,
        level: row.level,
        ...(row.conditions !== null ? { conditions: JSON.parse(row.conditions) as unknown } : {}),
        ...(row.expires_at !== null ? { expiresAt: row.expires_at } : {}),
        grantedBy: row.granted_by,
      }),
      createdAt: row.created_at,
      reason: row.reason,
      revokedAt: row.revoked_at,
      revokedBy: row.revoked_by,
      revokeReason: row.revoke_reason,
    }),
  );

/** A new grant's id: `g-` and 10 hex digits. */
export function newGrantId(): string {
  return `g-${randomBytes(5).toString("hex")}`;
}

/** The values a new grant row is written with, in column order. */
export function grantValues(id: string, grant: Grant, reason: string | undefined, now: number): unknown[] {
  return [id, grant.agent, grant.tool, grant.level, grant.conditions ? JSON.stringify(grant.conditions) : null, grant.expiresAt ?? null, grant.grantedBy, reason ?? null, now];
}

export const GRANT_INSERT = "INSERT INTO grants (id, agent, tool, level, conditions, expires_at, granted_by, reason, created_at) VALUES";
