import { createPrivateKeyJwtAuth } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import type { AddClientAuthentication, OAuthClientProvider, OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { ConfigError } from "../../../core/errors.js";
import type { NetworkRules } from "../../net/address-guard.js";
import type { McpOAuth } from "../mcp-config.js";
import type { CredentialVault } from "./credential-vault.js";
import { checkDiscovery } from "./discovery-check.js";
import { refusalOf } from "./oauth-fetch.js";

/**
 * A person authorizing troupe with a server's authorization server: `troupe mcp login` prints
 * the URL (and may open it), listens on a loopback port for the redirect, and resolves with the
 * code it brings back (its `state` checked).
 */
export interface Authorizer {
  /** The loopback redirect URI the authorization server sends the person back to. */
  readonly redirectUrl: string;
  /** The state of the authorization about to begin (each has its own). */
  state(): string;
  /** Sends the person to the authorization URL and resolves with the code the redirect brought back. */
  authorize(url: URL): Promise<string>;
}

export interface OAuthProviderOptions {
  server: string;
  url: URL;
  config: McpOAuth;
  vault: CredentialVault;
  rules: NetworkRules;
  /** Present in `troupe mcp login`; absent where no person is there (a run, `troupe serve`): authorizing then fails with mcp_login_required. */
  authorizer?: Authorizer;
}

/** Tokens as kept: the server's answer, and when it came (so its expiry can be told). */
type KeptTokens = OAuthTokens & { obtained_at?: number };

/** The redirect URI of a client whose registration was made elsewhere: never used to send a person, only so the SDK sees an interactive client. */
const UNUSED_REDIRECT = "http://127.0.0.1/callback";
/** How long a token read from the store is used before it is read again (another process may have refreshed it). */
const TOKEN_CACHE_MS = 5_000;

/**
 * troupe's OAuthClientProvider for one MCP server: the SDK's `auth()` drives discovery,
 * registration, PKCE, the code exchange and refresh; this keeps what it yields (sealed in the
 * store), checks what discovery found before it is used, and decides who authorizes — a person at
 * `troupe mcp login`, or nobody (then the run is told to log in).
 */
export class TroupeOAuthProvider implements OAuthClientProvider {
  readonly #options: OAuthProviderOptions;
  #client: OAuthClientInformationMixed | undefined;
  /** The tokens as last read from the store (or none there), and when they were read. */
  #tokens: { value: KeptTokens | undefined; updatedAt: number | undefined; readAt: number } | undefined;
  #verifier: string | undefined;
  #code: string | undefined;
  readonly addClientAuthentication?: AddClientAuthentication;
  readonly clientMetadataUrl?: string;

  private constructor(options: OAuthProviderOptions, client: OAuthClientInformationMixed | undefined) {
    this.#options = options;
    this.#client = client;
    const { config } = options;
    if (config.clientMetadataUrl) this.clientMetadataUrl = config.clientMetadataUrl;
    if (config.privateKey && config.clientId) {
      this.addClientAuthentication = createPrivateKeyJwtAuth({ issuer: config.clientId, subject: config.clientId, privateKey: config.privateKey, alg: config.algorithm });
    }
  }

  /** A provider with the server's kept client registration loaded (its redirect URI is needed at once). */
  static async open(options: OAuthProviderOptions): Promise<TroupeOAuthProvider> {
    const { config } = options;
    const configured = config.clientId ? { client_id: config.clientId, ...(config.clientSecret ? { client_secret: config.clientSecret } : {}) } : undefined;
    const kept = configured ? undefined : (await options.vault.read<OAuthClientInformationMixed>("client"))?.value;
    return new TroupeOAuthProvider(options, configured ?? kept);
  }

  get #interactive(): boolean {
    return this.#options.config.grant === "authorization_code";
  }

  get redirectUrl(): string | undefined {
    if (!this.#interactive) return undefined;
    if (this.#options.authorizer) return this.#options.authorizer.redirectUrl;
    const registered = this.#client && "redirect_uris" in this.#client ? this.#client.redirect_uris[0] : undefined;
    return registered ?? UNUSED_REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { config } = this.#options;
    const redirect = this.redirectUrl;
    return {
      client_name: "troupe",
      redirect_uris: this.#interactive && redirect ? [redirect] : [],
      grant_types: this.#interactive ? ["authorization_code", "refresh_token"] : ["client_credentials"],
      response_types: this.#interactive ? ["code"] : [],
      token_endpoint_auth_method: config.privateKey ? "private_key_jwt" : config.clientSecret ? "client_secret_basic" : "none",
      ...(config.scope ? { scope: config.scope } : {}),
    };
  }

  state(): string {
    return this.#options.authorizer?.state() ?? "";
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    // Nobody to authorize and no client yet: registering one now (for a redirect no one waits on) would only leave it behind.
    if (!this.#client && this.#interactive && !this.#options.authorizer && !this.#options.config.clientMetadataUrl) {
      throw new ConfigError("mcp_login_required", `the MCP server "${this.#options.server}" needs a person to authorize troupe: run troupe mcp login ${this.#options.server}`, { server: this.#options.server });
    }
    return this.#client;
  }

  async saveClientInformation(information: OAuthClientInformationMixed): Promise<void> {
    // A client given in the config is the config's: nothing of it is written to the store.
    if (this.#options.config.clientId) return;
    this.#client = information;
    await this.#options.vault.write("client", information);
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (!this.#tokens || Date.now() - this.#tokens.readAt > TOKEN_CACHE_MS) {
      const kept = await this.#options.vault.read<KeptTokens>("tokens");
      this.#tokens = { value: kept?.value, updatedAt: kept?.updatedAt, readAt: Date.now() };
    }
    if (!this.#tokens.value) return undefined;
    const { obtained_at: _obtainedAt, ...tokens } = this.#tokens.value;
    return tokens;
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const value: KeptTokens = { ...tokens, obtained_at: Date.now() };
    const updatedAt = await this.#options.vault.write("tokens", value);
    this.#tokens = { value, updatedAt, readAt: Date.now() };
  }

  /** When the kept access token expires (ms since the epoch), if the server said. */
  expiresAt(): number | undefined {
    const tokens = this.#tokens?.value;
    return tokens?.expires_in !== undefined && tokens.obtained_at !== undefined ? tokens.obtained_at + tokens.expires_in * 1000 : undefined;
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    const { server, authorizer } = this.#options;
    if (!authorizer) {
      throw new ConfigError("mcp_login_required", `the MCP server "${server}" needs a person to authorize troupe: run troupe mcp login ${server}`, { server });
    }
    // Shown to a person, maybe opened in their browser: only an https (or loopback http) URL.
    const refused = url.protocol === "https:" ? undefined : refusalOf(url, this.#options.url, this.#options.rules);
    if (refused || (url.protocol !== "https:" && url.protocol !== "http:")) {
      throw new ConfigError("mcp_oauth_refused", `troupe refused to send a person to ${url.origin}: ${refused ?? "not an https URL"}`, { server });
    }
    this.#code = await authorizer.authorize(url);
  }

  /** The code the last authorization brought back, once (the caller exchanges it). */
  takeCode(): string | undefined {
    const code = this.#code;
    this.#code = undefined;
    return code;
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.#verifier) throw new ConfigError("mcp_login_required", `no authorization of the MCP server "${this.#options.server}" is under way: run troupe mcp login ${this.#options.server}`);
    return this.#verifier;
  }

  prepareTokenRequest(scope?: string): URLSearchParams | undefined {
    if (this.#interactive) return undefined;
    return new URLSearchParams({ grant_type: "client_credentials", ...(scope ? { scope } : {}) });
  }

  async invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): Promise<void> {
    const { vault, config } = this.#options;
    if (scope === "verifier") {
      this.#verifier = undefined;
      return;
    }
    if (scope === "tokens" || scope === "all") {
      // Only the tokens this process read: another may have refreshed them since.
      const read = this.#tokens?.updatedAt;
      this.#tokens = undefined;
      if (read !== undefined) await vault.forget("tokens", read);
    }
    if ((scope === "client" || scope === "all") && !config.clientId) {
      this.#client = undefined;
      await vault.forget("client");
    }
    if (scope === "discovery" || scope === "all") await vault.forget("discovery");
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    checkDiscovery(state, this.#options.url, this.#options.rules, this.#options.config.trustedOrigins);
    await this.#options.vault.write("discovery", state);
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    const kept = (await this.#options.vault.read<OAuthDiscoveryState>("discovery"))?.value;
    if (!kept) return undefined;
    // Kept from an earlier discovery, checked again: the rules may have changed since.
    checkDiscovery(kept, this.#options.url, this.#options.rules, this.#options.config.trustedOrigins);
    return kept;
  }
}
