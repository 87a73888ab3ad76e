import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { parseEnv } from "../src/config/env.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { mcpLogin } from "../src/runtime/mcp-auth.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { CLI, cleanEnv, runCli, tempDir } from "./helpers.js";
import { envelope, makeApp, waitForStatus } from "./server-helpers.js";
import { type OAuthTestServer, startOAuthServer } from "./oauth-helpers.js";

// On main, troupe's MCP client sent static headers only: a server that asks for OAuth (most hosted
// ones) answered 401 and could not be used at all.

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function oauthServer(): Promise<OAuthTestServer> {
  const server = await startOAuthServer();
  servers.push(server);
  return server;
}

function engine(directory: string, mcp: Record<string, unknown>, env: Record<string, string> = {}) {
  return Troupe.create({
    models: modelSetOf(new ScriptedChatModel({ steps: [] })),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    toolsConfig: { mcp: { servers: mcp } },
    ...(Object.keys(env).length > 0 ? { env: parseEnv(env) } : {}),
  });
}

/** `troupe mcp login` in a child process, with a person whose browser follows the authorization server back to troupe's listener. */
async function login(directory: string, server: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, "mcp", "login", server, "--data-dir", path.join(directory, "data")], { cwd: directory, env: { ...cleanEnv(), ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let visited = false;
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    const url = /^(https?:\/\/\S+)$/m.exec(stderr)?.[1];
    if (url && !visited) {
      visited = true;
      void (async () => {
        const consent = await fetch(url, { redirect: "manual" });
        await fetch(new URL(consent.headers.get("location") as string, url));
      })();
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

describe("OAuth to an MCP server that asks for it", () => {
  it("logs in once with troupe mcp login, keeps the tokens sealed, uses and refreshes them in later runs, and forgets them on logout", async () => {
    const secure = await oauthServer();
    const directory = tempDir();
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { mcp: { servers: { secure: { url: secure.url } } } } }));

    // Before a login: troupe says what to do, rather than that the server is down.
    await expect(engine(directory, { secure: { url: secure.url } })).rejects.toMatchObject({ code: "mcp_login_required", message: expect.stringContaining("run troupe mcp login secure") });

    const loggedIn = await login(directory, "secure");
    expect(loggedIn.code, loggedIn.stderr).toBe(0);
    expect(loggedIn.stderr).toContain('Open this URL to authorize troupe with the MCP server "secure"');
    expect(loggedIn.stdout.trim()).toBe('troupe is authorized with "secure": 1 tool (secure.whoami)');
    expect(secure.grants).toEqual(["authorization_code"]);

    // Sealed at rest: neither token is in the database, and the key file is the owner's only.
    const [access, refresh] = secure.issued as [string, string];
    const raw = new Database(path.join(directory, "data", "troupe.db"), { readonly: true });
    const rows = raw.prepare("SELECT server, kind, resource, sealed FROM mcp_credentials ORDER BY kind").all() as Array<{ server: string; kind: string; resource: string; sealed: string }>;
    raw.close();
    expect(rows.map((row) => [row.server, row.kind, row.resource])).toEqual([
      ["secure", "client", secure.url],
      ["secure", "discovery", secure.url],
      ["secure", "tokens", secure.url],
    ]);
    for (const row of rows) expect(row.sealed).toMatch(/^v1:[0-9a-f]{12}:/);
    const database = readFileSync(path.join(directory, "data", "troupe.db"));
    expect(database.includes(access)).toBe(false);
    expect(database.includes(refresh)).toBe(false);
    expect(statSync(path.join(directory, "data", "secret.key")).mode & 0o777).toBe(0o600);

    // A later run, in another process: the kept tokens are used as they are.
    let troupe = await engine(directory, { secure: { url: secure.url } });
    try {
      expect(await troupe.callTool("secure.whoami", {}, { agent: "research" })).toMatchObject({ ok: true, value: { text: expect.stringMatching(/^client client-/) } });
      // The access token runs out: the server says 401, the client refreshes (once) and the call goes through.
      secure.expireAccessTokens();
      expect(await troupe.callTool("secure.whoami", { note: "after expiry" }, { agent: "research" })).toMatchObject({ ok: true });
      expect(secure.grants).toEqual(["authorization_code", "refresh_token"]);
      // No token in the audit trail or the events.
      const audit = JSON.stringify(await troupe.store.audit.list());
      for (const token of secure.issued) expect(audit.includes(token)).toBe(false);
    } finally {
      await troupe.shutdown();
    }
    // The refreshed tokens were kept: a new process uses them without refreshing again.
    troupe = await engine(directory, { secure: { url: secure.url } });
    try {
      expect(await troupe.callTool("secure.whoami", {}, { agent: "research" })).toMatchObject({ ok: true });
      expect(secure.grants).toEqual(["authorization_code", "refresh_token"]);
    } finally {
      await troupe.shutdown();
    }
    for (const token of secure.issued) {
      expect(loggedIn.stdout.includes(token) || loggedIn.stderr.includes(token)).toBe(false);
    }

    // Another key cannot open them, and says so; the tokens were not sent anywhere.
    const otherKey = Buffer.alloc(32, 7).toString("base64");
    await expect(engine(directory, { secure: { url: secure.url } }, { TROUPE_SECRET_KEY: otherKey })).rejects.toMatchObject({
      code: "mcp_credentials_unreadable",
      message: expect.stringMatching(/sealed with key [0-9a-f]{12}, and this process has key [0-9a-f]{12}; set TROUPE_SECRET_KEY/),
    });
    // A changed URL: the tokens made for the old one are not sent to the new one.
    await expect(engine(directory, { secure: { url: `${secure.url}/other` } })).rejects.toMatchObject({ code: expect.stringMatching(/mcp_login_required|mcp_unavailable/) });

    const loggedOut = await runCli(["mcp", "logout", "secure", "--data-dir", path.join(directory, "data")], { cwd: directory });
    expect(loggedOut.stdout.trim()).toBe('forgot 3 credentials of "secure"');
    await expect(engine(directory, { secure: { url: secure.url } })).rejects.toMatchObject({ code: "mcp_login_required" });
  });

  it("leaves no token in troupe serve's logs, a run's events or its audit rows", async () => {
    const secure = await oauthServer();
    const directory = tempDir();
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { mcp: { servers: { secure: { url: secure.url } } } } }));
    // The login, in process this time (the function troupe mcp login calls), with the person's browser.
    const result = await mcpLogin("secure", {
      dataDir: path.join(directory, "data"),
      configDir: directory,
      present: async (url) => {
        const consent = await fetch(url, { redirect: "manual" });
        await fetch(new URL(consent.headers.get("location") as string, url));
      },
    });
    expect(result).toEqual({ tools: ["secure.whoami"], authorized: true });
    const app = await makeApp({
      steps: [planStep([subtask("s1", "research", "Ask who I am")]), toolStep("s1", "secure.whoami", {}), finalStep("s1", "a client", { contains: "client client-" }), reviewStep(0.9), answerStep("a client")],
      toolsConfig: { mcp: { servers: { secure: { url: secure.url } } } },
      troupe: { dataDir: path.join(directory, "data") },
    });
    secure.expireAccessTokens();
    const accepted = envelope(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "who am I to the secure server" } })).data;
    await waitForStatus(app, accepted.task_id as string, ["completed"]);
    expect(secure.grants).toEqual(["authorization_code", "refresh_token"]);
    const events = (await app.app.inject({ method: "GET", url: `/api/v1/tasks/${accepted.task_id}/events` })).body;
    const seen = [JSON.stringify(app.logs), events, JSON.stringify(await app.troupe.store.audit.list()), JSON.stringify(await app.troupe.store.events.list(accepted.task_id as string))].join("\n");
    expect(seen).toContain("secure.whoami");
    for (const token of secure.issued) expect(seen.includes(token), token).toBe(false);
  });

  it("refuses a login for a server that is not in the config, or has no OAuth", async () => {
    const directory = tempDir();
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { mcp: { servers: { local: { command: "node", args: ["x.mjs"] } } } } }));
    const missing = await runCli(["mcp", "login", "nope", "--data-dir", path.join(directory, "data")], { cwd: directory });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no MCP server "nope" in the config\'s tools.mcp.servers (it has local)');
    const stdio = await runCli(["mcp", "login", "local", "--data-dir", path.join(directory, "data")], { cwd: directory });
    expect(stdio.code).toBe(2);
    expect(stdio.stderr).toContain('the MCP server "local" runs on stdio: there is nothing to log in to');
  });
});

/** An MCP endpoint that answers 401 and metadata a test writes: a hostile (or broken) server and authorization server. */
async function hostile(routes: (base: string) => Record<string, { status?: number; headers?: Record<string, string>; body?: unknown }>): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  let base = "";
  const http: Server = createServer((request, response) => {
    hits.push(`${request.method} ${request.url}`);
    const route = routes(base)[request.url?.split("?")[0] ?? ""];
    if (request.url === "/mcp") {
      response.writeHead(401, { "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"` }).end();
      return;
    }
    if (!route) {
      response.writeHead(404).end();
      return;
    }
    const body = typeof route.body === "string" ? route.body : JSON.stringify(route.body ?? {});
    response.writeHead(route.status ?? 200, { "content-type": "application/json", ...route.headers }).end(body);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", () => resolve()));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  servers.push({ close: () => new Promise<void>((resolve) => http.close(() => resolve())) });
  return { url: `${base}/mcp`, hits };
}

/** A listener that records every request it gets: where a hostile metadata document points troupe. */
async function sink(): Promise<{ base: string; hits: string[] }> {
  const hits: string[] = [];
  const http = createServer((request, response) => {
    hits.push(`${request.method} ${request.url}`);
    response.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.2", () => resolve()));
  servers.push({ close: () => new Promise<void>((resolve) => http.close(() => resolve())) });
  return { base: `http://127.0.0.2:${(http.address() as AddressInfo).port}`, hits };
}

const asMetadata = (issuer: string, overrides: Record<string, unknown> = {}) => ({
  issuer,
  authorization_endpoint: `${issuer}/authorize`,
  token_endpoint: `${issuer}/token`,
  registration_endpoint: `${issuer}/register`,
  response_types_supported: ["code"],
  code_challenge_methods_supported: ["S256"],
  ...overrides,
});

describe("what an MCP server's OAuth metadata may make troupe do", () => {
  it("does not fetch an authorization server at an internal address, nor over plain http elsewhere", async () => {
    const elsewhere = await sink();
    for (const named of ["http://169.254.169.254/latest", elsewhere.base]) {
      const server = await hostile((base) => ({ "/.well-known/oauth-protected-resource/mcp": { body: { resource: `${base}/mcp`, authorization_servers: [named] } } }));
      await expect(engine(tempDir(), { evil: { url: server.url } })).rejects.toMatchObject({ code: "mcp_oauth_refused", message: expect.stringMatching(/refused: .*(link-local|loopback)|blocked|plain http|is a/) });
    }
    expect(elsewhere.hits).toEqual([]);
  });

  it("refuses metadata whose issuer is another, or whose endpoints are on another origin or not http(s)", async () => {
    const elsewhere = await sink();
    const cases: Array<[string, (base: string) => Record<string, unknown>, RegExp]> = [
      ["issuer", (base) => asMetadata(`${base}/someone-else`), /names the issuer .* not .* where it was fetched/],
      ["token endpoint", (base) => asMetadata(base, { token_endpoint: `${elsewhere.base}/token` }), /its token_endpoint http:\/\/127\.0\.0\.2:\d+\/token is on another origin/],
      ["authorization endpoint", (base) => asMetadata(base, { authorization_endpoint: `http://169.254.169.254/authorize` }), /its authorization_endpoint http:\/\/169\.254\.169\.254\/authorize is on another origin/],
    ];
    for (const [, metadata, message] of cases) {
      const server = await hostile((base) => ({
        "/.well-known/oauth-protected-resource/mcp": { body: { resource: `${base}/mcp`, authorization_servers: [base] } },
        "/.well-known/oauth-authorization-server": { body: metadata(base) },
      }));
      await expect(engine(tempDir(), { evil: { url: server.url } })).rejects.toMatchObject({ code: "mcp_oauth_refused", message: expect.stringMatching(message) });
      // Nothing was registered or exchanged anywhere.
      expect(server.hits.filter((hit) => hit.startsWith("POST"))).toEqual(["POST /mcp"]);
    }
    expect(elsewhere.hits).toEqual([]);
    // A URL that is not http(s) at all is refused by the SDK's metadata schema before troupe sees it.
    const scripted = await hostile((base) => ({
      "/.well-known/oauth-protected-resource/mcp": { body: { resource: `${base}/mcp`, authorization_servers: [base] } },
      "/.well-known/oauth-authorization-server": { body: asMetadata(base, { authorization_endpoint: "javascript:alert(1)" }) },
    }));
    await expect(engine(tempDir(), { evil: { url: scripted.url } })).rejects.toMatchObject({ code: "mcp_unavailable", message: expect.stringContaining("authorization_endpoint") });
    expect(scripted.hits.filter((hit) => hit.startsWith("POST"))).toEqual(["POST /mcp"]);
  });

  it("stops reading a metadata document past 1 MiB, and does not follow a redirect to another origin", async () => {
    for (const headers of [{}, { "content-length": String(4 * 1024 * 1024 + 200) }] as Array<Record<string, string>>) {
      const huge = await hostile((base) => ({
        "/.well-known/oauth-protected-resource/mcp": { body: { resource: `${base}/mcp`, authorization_servers: [base] } },
        "/.well-known/oauth-authorization-server": { headers, body: asMetadata(base, { padding: "x".repeat(4 * 1024 * 1024) }) },
      }));
      await expect(engine(tempDir(), { evil: { url: huge.url } })).rejects.toMatchObject({ code: "mcp_oauth_refused", message: expect.stringMatching(/(sent|would send) (more than 1048576|\d+) bytes/) });
    }
    const elsewhere = await sink();
    const redirecting = await hostile((base) => ({
      "/.well-known/oauth-protected-resource/mcp": { body: { resource: `${base}/mcp`, authorization_servers: [base] } },
      "/.well-known/oauth-authorization-server": { status: 302, headers: { location: `${elsewhere.base}/metadata` } },
      "/.well-known/openid-configuration": { status: 302, headers: { location: `http://169.254.169.254/metadata` } },
    }));
    // Neither redirect is followed: no metadata, so nothing to authorize with but a login.
    await expect(engine(tempDir(), { evil: { url: redirecting.url } })).rejects.toMatchObject({ code: "mcp_login_required" });
    expect(elsewhere.hits).toEqual([]);
  });
});
