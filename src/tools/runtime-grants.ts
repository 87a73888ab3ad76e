import type { Grant } from "./permissions.js";

/**
 * Grants added and revoked while troupe runs (`troupe grants`, `/api/v1/grants`), kept in the
 * store so every process sees them. Revoked grants stay listed: a call they would have allowed
 * is denied naming the revocation.
 */
export interface RuntimeGrant {
  id: string;
  grant: Grant;
  createdAt: number;
  reason: string | null;
  revokedAt: number | null;
  revokedBy: string | null;
  revokeReason: string | null;
}

/** Where the registry reads the runtime grants in force when a call starts. */
export interface RuntimeGrantSource {
  /** The grants now, revoked ones included; cheap when nothing changed since the last read. */
  current(): Promise<readonly RuntimeGrant[]>;
}

/** How a grant is named in a denial: its id when it was given at runtime, else its tool, level and who granted it. */
export function describeGrant(grant: Grant, runtime?: RuntimeGrant): string {
  const what = `${grant.tool}, ${grant.level}, granted by ${grant.grantedBy}`;
  return runtime ? `grant ${runtime.id} (${what})` : `grant (${what})`;
}
