import type { Env } from "../config/env.js";
import type { SecretBox } from "../core/mcp-credentials.js";
import type { Store } from "../store/index.js";
import { openSecretBox } from "../store/secrets/secret-box.js";
import type { CredentialKeeping } from "../tools/mcp/oauth/credential-vault.js";

/**
 * Where MCP servers' OAuth credentials are kept: the store's rows, sealed with TROUPE_SECRET_KEY
 * or the data directory's key file. The key is read (or the file made) only when a credential is
 * first sealed or opened, so a troupe with no OAuth server never touches it.
 */
export function mcpCredentialsOf(store: Store, env: Pick<Env, "TROUPE_SECRET_KEY">): CredentialKeeping {
  let box: SecretBox | undefined;
  return {
    store: store.mcpCredentials,
    box: () => (box ??= openSecretBox({ directory: store.directory, ...(env.TROUPE_SECRET_KEY ? { key: env.TROUPE_SECRET_KEY } : {}) })),
  };
}
