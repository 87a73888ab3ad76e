/**
 * What troupe's MCP client keeps for a server that uses OAuth: its tokens, its client
 * registration (dynamic or pre-registered) and the authorization server it discovered. The store
 * keeps each as ciphertext (`SecretBox`); the plaintext exists only in the process using it.
 */

export const CREDENTIAL_KINDS = ["tokens", "client", "discovery"] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

export interface SealedCredential {
  /** The server's name in the config. */
  server: string;
  kind: CredentialKind;
  /** The server URL the credential was made for: used for that URL only. */
  resource: string;
  sealed: string;
  updatedAt: number;
}

export interface McpCredentialStore {
  get(server: string, kind: CredentialKind): Promise<SealedCredential | undefined>;
  /** Replaces the server's credential of that kind; committed before this resolves. */
  put(credential: SealedCredential): Promise<void>;
  /** Forgets the server's credentials (of one kind, or all); resolves with how many were dropped. */
  delete(server: string, kind?: CredentialKind): Promise<number>;
  /** What is kept, without the ciphertext. */
  list(): Promise<Array<Omit<SealedCredential, "sealed">>>;
}

/**
 * Authenticated encryption with troupe's secret key. `context` is bound into each ciphertext (a
 * server's tokens cannot be moved to another server's row and still open). `open` throws when the
 * text was sealed with another key, changed, or moved.
 */
export interface SecretBox {
  /** A short id of the key (a hash prefix, never the key), for messages. */
  readonly keyId: string;
  seal(plaintext: string, context: string): string;
  open(sealed: string, context: string): string;
}
