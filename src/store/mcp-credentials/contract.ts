import type { CredentialKind, SealedCredential } from "../../core/mcp-credentials.js";

export interface CredentialRow {
  server: string;
  kind: string;
  resource: string;
  sealed: string;
  updated_at: number | string;
}

export const credentialOf = (row: CredentialRow): SealedCredential => ({
  server: row.server,
  kind: row.kind as CredentialKind,
  resource: row.resource,
  sealed: row.sealed,
  updatedAt: Number(row.updated_at),
});
