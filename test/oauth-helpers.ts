import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import type { AuthorizationParams, OAuthServerProvider } from "@modelcontextprotocol/sdk/server/auth/provider.js";
import { mcpAuthRouter } from "@modelcontextprotocol/sdk/server/auth/router.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import express, { type Response } from "express";
import { z } from "zod";

/**
 * A real OAuth 2.1 authorization server and MCP resource server for the tests, on the MCP SDK's
 * server auth (its router checks PKCE, registration and the token requests as a real one would):
 * dynamic registration, an authorization endpoint that consents at once (the person), tokens that
 * a test can expire, refresh with rotation, and an MCP endpoint behind bearer auth with a `whoami`
 * tool. Every token it issues is listed, so a test can look for them where they must not be.
 */
export interface OAuthTestServer {
  /** The MCP endpoint. */
  url: string;
  issuer: string;
  /** Every access and refresh token issued, in order. */
  issued: string[];
  /** The grants the token endpoint was asked for, in order. */
  grants: string[];
  /** Makes every access token issued so far expired (the refresh tokens stay good). */
  expireAccessTokens(): void;
  close(): Promise<void>;
}

class MemoryProvider implements OAuthServerProvider {
  readonly clients = new Map<string, OAuthClientInformationFull>();
  readonly codes = new Map<string, { client: string; challenge: string; resource?: string }>();
  readonly access = new Map<string, AuthInfo>();
  readonly refresh = new Map<string, string>();
  readonly issued: string[] = [];
  readonly grants: string[] = [];

  get clientsStore() {
    return {
      getClient: async (id: string) => this.clients.get(id),
      registerClient: async (client: Omit<OAuthClientInformationFull, "client_id" | "client_id_issued_at">) => {
        const full = { ...client, client_id: `client-${randomBytes(4).toString("hex")}`, client_id_issued_at: Math.floor(Date.now() / 1000) } as OAuthClientInformationFull;
        this.clients.set(full.client_id, full);
        return full;
      },
    };
  }

  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    const code = randomBytes(16).toString("hex");
    this.codes.set(code, { client: client.client_id, challenge: params.codeChallenge, ...(params.resource ? { resource: params.resource.href } : {}) });
    const target = new URL(params.redirectUri);
    target.searchParams.set("code", code);
    if (params.state) target.searchParams.set("state", params.state);
    res.redirect(target.href);
  }

  async challengeForAuthorizationCode(_client: OAuthClientInformationFull, code: string): Promise<string> {
    const entry = this.codes.get(code);
    if (!entry) throw new Error("unknown code");
    return entry.challenge;
  }

  #issue(client: string): OAuthTokens {
    const access = `at-${randomBytes(12).toString("hex")}`;
    const refresh = `rt-${randomBytes(12).toString("hex")}`;
    this.access.set(access, { token: access, clientId: client, scopes: [], expiresAt: Math.floor(Date.now() / 1000) + 3600 });
    this.refresh.set(refresh, client);
    this.issued.push(access, refresh);
    return { access_token: access, token_type: "Bearer", expires_in: 3600, refresh_token: refresh };
  }

  async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<OAuthTokens> {
    this.grants.push("authorization_code");
    if (!this.codes.delete(code)) throw new Error("unknown code");
    return this.#issue(client.client_id);
  }

  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    this.grants.push("refresh_token");
    // Rotation: a refresh token is good once.
    if (this.refresh.get(refreshToken) !== client.client_id) throw new Error("unknown refresh token");
    this.refresh.delete(refreshToken);
    return this.#issue(client.client_id);
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const info = this.access.get(token);
    if (!info) throw new Error("unknown token");
    return info;
  }
}

export async function startOAuthServer(): Promise<OAuthTestServer> {
  const provider = new MemoryProvider();
  const app = express();
  const http: Server = await new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server));
  });
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const mcpUrl = new URL("/mcp", base);
  app.use(mcpAuthRouter({ provider, issuerUrl: new URL(base), resourceServerUrl: mcpUrl, tokenOptions: { rateLimit: false }, authorizationOptions: { rateLimit: false }, clientRegistrationOptions: { rateLimit: false } }));
  const bearer = requireBearerAuth({ verifier: provider, resourceMetadataUrl: `${base}/.well-known/oauth-protected-resource/mcp` });
  app.post("/mcp", express.json(), bearer, async (request, response) => {
    const server = new McpServer({ name: "secure", version: "1.0.0" });
    server.registerTool("whoami", { description: "Who the token belongs to.", inputSchema: { note: z.string().optional() }, annotations: { readOnlyHint: true } }, async (_args, extra) => ({
      content: [{ type: "text", text: `client ${extra.authInfo?.clientId ?? "?"}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response, request.body);
  });
  app.get("/mcp", (_request, response) => response.status(405).end());
  return {
    url: mcpUrl.href,
    issuer: base,
    issued: provider.issued,
    grants: provider.grants,
    expireAccessTokens: () => {
      for (const info of provider.access.values()) info.expiresAt = Math.floor(Date.now() / 1000) - 10;
    },
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
