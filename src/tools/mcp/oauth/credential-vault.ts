import { ConfigError, errorMessage } from "../../../core/errors.js";
import type { CredentialKind, McpCredentialStore, SecretBox } from "../../../core/mcp-credentials.js";

/** Where an MCP client keeps what OAuth gave it: the store's rows, sealed with troupe's secret key. */
export interface CredentialKeeping {
  store: McpCredentialStore;
  /** Made on first use (it may create the data directory's key file). */
  box: () => SecretBox;
}

/**
 * One server's credentials: JSON values sealed per kind, bound to the server's name, the kind
 * and the server URL (the sealing's additional data), so a row copied to another server or kind
 * does not open, and a row made for another URL is not used (the config's URL changed: the old
 * tokens are not sent to the new server).
 */
export class CredentialVault {
  readonly #server: string;
  readonly #resource: string;
  readonly #keeping: CredentialKeeping;

  constructor(server: string, resource: string, keeping: CredentialKeeping) {
    this.#server = server;
    this.#resource = resource;
    this.#keeping = keeping;
  }

  #context(kind: CredentialKind): string {
    return `troupe mcp\0${this.#server}\0${kind}\0${this.#resource}`;
  }

  /** The kept value with when it was written, or undefined (none, or made for another URL). */
  async read<T>(kind: CredentialKind): Promise<{ value: T; updatedAt: number } | undefined> {
    const row = await this.#keeping.store.get(this.#server, kind);
    if (!row || row.resource !== this.#resource) return undefined;
    let text: string;
    try {
      text = this.#keeping.box().open(row.sealed, this.#context(kind));
    } catch (error) {
      throw new ConfigError(
        "mcp_credentials_unreadable",
        `the stored OAuth ${kind} of the MCP server "${this.#server}" cannot be opened: ${errorMessage(error)}; set TROUPE_SECRET_KEY to the key they were sealed with, or run troupe mcp login ${this.#server} again`,
        { server: this.#server },
      );
    }
    return { value: JSON.parse(text) as T, updatedAt: row.updatedAt };
  }

  async write(kind: CredentialKind, value: unknown): Promise<number> {
    const updatedAt = Date.now();
    await this.#keeping.store.put({ server: this.#server, kind, resource: this.#resource, sealed: this.#keeping.box().seal(JSON.stringify(value), this.#context(kind)), updatedAt });
    return updatedAt;
  }

  /** Forgets one kind, or all; with `ifUpdatedAt`, only when the row is still the one read then (another process may have refreshed it). */
  async forget(kind?: CredentialKind, ifUpdatedAt?: number): Promise<void> {
    if (kind && ifUpdatedAt !== undefined) {
      const row = await this.#keeping.store.get(this.#server, kind);
      if (!row || row.updatedAt !== ifUpdatedAt) return;
    }
    await this.#keeping.store.delete(this.#server, kind);
  }
}
