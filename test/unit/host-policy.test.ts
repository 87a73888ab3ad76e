import { connect } from "node:net";
import { networkInterfaces } from "node:os";
import { describe, expect, it } from "vitest";
import { parseAllowedHosts } from "../../src/core/host-names.js";
import { serverConfigFromEnv } from "../../src/server/config.js";
import { HostPolicy } from "../../src/server/host-policy.js";
import { listen } from "../protocol-helpers.js";
import { envelope, makeApp } from "../server-helpers.js";

const EVIL = "evil.example.com:8003";
const INITIALIZE = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A raw HTTP request on a socket (to send what fetch and inject will not: HTTP/1.0 without a Host), and the status line's code. */
async function rawStatus(base: string, request: string): Promise<number> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(request));
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk.toString();
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      if (match) {
        resolve(Number(match[1]));
        socket.destroy();
      }
    });
    socket.on("error", reject);
  });
}

describe("DNS rebinding: a request whose Host names another site is refused on every route", () => {
  it("refuses POST /execute and /mcp initialize from a rebound name (421 host_not_allowed), creating nothing", async () => {
    const app = await makeApp();
    const execute = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2+2" }, headers: { host: EVIL, origin: `http://${EVIL}` } });
    expect([execute.statusCode, envelope(execute).code]).toEqual([421, "host_not_allowed"]);
    expect(envelope(execute).message).toMatch(/does not name this server.*--allowed-hosts/);
    const mcp = await app.app.inject({ method: "POST", url: "/mcp", payload: INITIALIZE, headers: { ...MCP_HEADERS, host: EVIL, origin: `http://${EVIL}` } });
    expect(mcp.statusCode).toBe(421);
    expect(mcp.json()).toMatchObject({ jsonrpc: "2.0", error: { message: expect.stringMatching(/^host_not_allowed: /) } });
    expect(mcp.headers["mcp-session-id"]).toBeUndefined();
    expect(app.mcp.size).toBe(0);
    expect(await app.troupe.store.runs.count({})).toBe(0);
    // The same requests naming troupe are answered.
    const mine = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2+2" }, headers: { host: "127.0.0.1:8003", origin: "http://127.0.0.1:8003" } });
    expect(mine.statusCode).toBe(202);
  });

  it("covers the console and its files, /health, /metrics, the OpenAPI document, SSE, A2A and its card, /mcp and unknown paths", async () => {
    const app = await makeApp();
    const routes: Array<[string, string]> = [
      ["GET", "/"],
      ["GET", "/index.html"],
      ["GET", "/vendor/marked.js"],
      ["GET", "/health"],
      ["GET", "/health/live"],
      ["GET", "/api/v1/health"],
      ["GET", "/metrics"],
      ["GET", "/openapi.json"],
      ["GET", "/api/v1/tasks"],
      ["GET", "/api/v1/tasks/run-x/events"],
      ["GET", "/api/v1/events"],
      ["GET", "/.well-known/agent-card.json"],
      ["POST", "/a2a/jsonrpc"],
      ["GET", "/a2a/rest/v1/tasks"],
      ["GET", "/mcp"],
      ["DELETE", "/mcp"],
      ["GET", "/no/such/route"],
    ];
    for (const [method, url] of routes) {
      const refused = await app.app.inject({ method: method as "GET", url, headers: { host: EVIL } });
      expect([method, url, refused.statusCode]).toEqual([method, url, 421]);
      const answered = await app.app.inject({ method: method as "GET", url, headers: { host: "localhost:8003" } });
      expect([method, url, answered.statusCode === 421]).toEqual([method, url, false]);
    }
  });

  it("compares names as browsers do: ports ignored, case folded, one trailing dot, IPv6 in brackets; tricks refused", async () => {
    const app = await makeApp();
    const status = async (host: string, extra: Record<string, string> = {}) => (await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { host, ...extra } })).statusCode;
    for (const host of ["localhost", "localhost:8003", "LOCALHOST:8003", "localhost.:8003", "127.0.0.1:1", "[::1]:8003", "[0:0:0:0:0:0:0:1]", "2130706433:8003"]) expect([host, await status(host)]).toEqual([host, 200]);
    for (const host of [
      "evil.example.com",
      "localhost..",
      "localhost.evil.example.com",
      "127.0.0.1.nip.io",
      "localhost@evil.example.com",
      "evil.example.com#@localhost",
      "evil.example.com/localhost",
      "localhost:8003, evil.example.com",
      "[::1",
      "::1",
      "10.1.2.3",
      "%6cocalhost",
    ]) {
      expect([host, await status(host)]).toEqual([host, 421]);
    }
    // X-Forwarded-Host is a header a page may set: never read.
    expect(await status(EVIL, { "x-forwarded-host": "localhost" })).toBe(421);
    expect(await status("localhost", { "x-forwarded-host": EVIL })).toBe(200);
  });

  it("refuses a request with no Host at all (HTTP/1.0), on a real socket", async () => {
    const app = await makeApp();
    const base = await listen(app);
    expect(await rawStatus(base, "GET /api/v1/tasks HTTP/1.0\r\n\r\n")).toBe(421);
    expect(await rawStatus(base, "GET /health HTTP/1.0\r\n\r\n")).toBe(421);
    expect(await rawStatus(base, "GET /api/v1/tasks HTTP/1.0\r\nHost: \r\n\r\n")).toBe(421);
    expect(await rawStatus(base, `GET /api/v1/tasks HTTP/1.0\r\nHost: ${new URL(base).host}\r\n\r\n`)).toBe(200);
    // An absolute request target does not stand in for the Host.
    expect(await rawStatus(base, `GET ${base}/api/v1/tasks HTTP/1.1\r\nHost: ${EVIL}\r\nConnection: close\r\n\r\n`)).toBe(421);
  });
});

describe("Origin: a page of another site may not change anything", () => {
  it("refuses a state-changing request from another origin (another port of localhost too, and null), reads stay open", async () => {
    const app = await makeApp();
    const post = (origin: string | undefined, host = "localhost:8003") =>
      app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2+2" }, headers: { host, ...(origin !== undefined ? { origin } : {}) } });
    for (const origin of ["http://localhost:3000", "https://evil.example.com", "null", "http://127.0.0.1:8003", "file://", "not a url"]) {
      const refused = await post(origin);
      expect([origin, refused.statusCode, envelope(refused).code]).toEqual([origin, 403, "origin_not_allowed"]);
    }
    expect(await app.troupe.store.runs.count({})).toBe(0);
    expect((await post("http://localhost:8003")).statusCode).toBe(202);
    expect((await post("http://localhost", "localhost")).statusCode).toBe(202);
    expect((await post(undefined)).statusCode).toBe(202);
    // A read from another origin is answered (the browser keeps the answer from the page: no CORS).
    expect((await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { host: "localhost:8003", origin: "http://localhost:3000" } })).statusCode).toBe(200);
    // At /mcp every method may change something (a GET opens a session's stream).
    const mcpGet = await app.app.inject({ method: "GET", url: "/mcp", headers: { host: "localhost:8003", origin: "http://localhost:3000", accept: "text/event-stream" } });
    expect(mcpGet.statusCode).toBe(403);
    expect(mcpGet.json()).toMatchObject({ jsonrpc: "2.0", error: { message: expect.stringMatching(/^origin_not_allowed: /) } });
  });
});

describe("configured names", () => {
  it("answers the names of --allowed-hosts (a domain with its subdomains), and their pages may change things", async () => {
    const app = await makeApp({ config: { allowedHosts: "troupe.example.com, .corp.example" } });
    const status = async (host: string, origin?: string) =>
      (await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2+2" }, headers: { host, ...(origin ? { origin } : {}) } })).statusCode;
    expect(await status("troupe.example.com")).toBe(202);
    expect(await status("TROUPE.example.com.:443")).toBe(202);
    expect(await status("corp.example")).toBe(202);
    expect(await status("a.b.corp.example")).toBe(202);
    expect(await status("localhost")).toBe(202);
    expect(await status("evilcorp.example")).toBe(421);
    expect(await status("example.com")).toBe(421);
    // Behind a proxy that rewrites the Host: the configured name's page is troupe's.
    expect(await status("127.0.0.1:8003", "https://troupe.example.com")).toBe(202);
    expect(await status("127.0.0.1:8003", "https://x.corp.example:8443")).toBe(202);
    expect(await status("127.0.0.1:8003", "https://evil.example.com")).toBe(403);
  });

  it("reads TROUPE_ALLOWED_HOSTS, and the config file's server.allowedHosts when neither flag nor variable is given", async () => {
    expect(serverConfigFromEnv({ TROUPE_ALLOWED_HOSTS: " troupe.internal " }).allowedHosts).toBe("troupe.internal");
    const fromFile = await makeApp({ troupe: { config: { server: { allowedHosts: ["troupe.internal"] } } } });
    expect((await fromFile.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { host: "troupe.internal:8003" } })).statusCode).toBe(200);
    expect((await fromFile.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { host: "other.internal" } })).statusCode).toBe(421);
    // The flag (or variable) replaces the file's list.
    const both = await makeApp({ config: { allowedHosts: "other.internal" }, troupe: { config: { server: { allowedHosts: ["troupe.internal"] } } } });
    expect((await both.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { host: "troupe.internal" } })).statusCode).toBe(421);
    expect((await both.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { host: "other.internal" } })).statusCode).toBe(200);
  });

  it("refuses entries that are not names, naming them", async () => {
    for (const entry of ["troupe.example.com:8003", "a/b", ".10.0.0.1", "http://troupe.example.com", "a b", "@"]) {
      expect(() => parseAllowedHosts([entry], "--allowed-hosts")).toThrow(expect.objectContaining({ code: "invalid_server_config", message: expect.stringContaining(entry) }));
    }
    expect(parseAllowedHosts(["Troupe.Example.COM.", " .Corp.example ", "*", "[::1]", ""], "x")).toEqual(["troupe.example.com", ".corp.example", "*", "[::1]"]);
    await expect(makeApp({ config: { allowedHosts: "troupe.example.com:80" } })).rejects.toMatchObject({ code: "invalid_server_config" });
  });
});

describe("on another address (API keys required)", () => {
  const keys = { host: "0.0.0.0", apiKeys: "alice:key-alice-123" };
  const alice = { authorization: "Bearer key-alice-123" };

  it("with no names configured takes any Host (keys guard it) but still refuses another site's changes", async () => {
    const app = await makeApp({ config: keys });
    expect((await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { ...alice, host: "troupe:8003" } })).statusCode).toBe(200);
    expect((await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { host: EVIL } })).statusCode).toBe(401);
    const crossSite = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2+2" }, headers: { ...alice, host: "troupe:8003", origin: "https://evil.example.com" } });
    expect([crossSite.statusCode, envelope(crossSite).code]).toEqual([403, "origin_not_allowed"]);
  });

  it("with names configured takes those, loopback and this machine's own addresses (what probes send)", async () => {
    const app = await makeApp({ config: { ...keys, allowedHosts: "troupe.example.com" } });
    const status = async (host: string) => (await app.app.inject({ method: "GET", url: "/health", headers: { host } })).statusCode;
    expect(await status("troupe.example.com")).toBe(200);
    expect(await status("localhost:8003")).toBe(200);
    expect(await status("troupe:8003")).toBe(421);
    const own = Object.values(networkInterfaces())
      .flat()
      .find((entry) => entry && !entry.internal && entry.family === "IPv4");
    if (own) expect(await status(`${own.address}:8003`)).toBe(200);
    expect(await status("192.0.2.77:8003")).toBe(421);
  });

  it("judges a Host header the same however often it is asked, past the headers it remembers too", () => {
    const policy = new HostPolicy({ listen: "127.0.0.1", allowed: parseAllowedHosts([".example.org"], "test") });
    for (let round = 0; round < 3; round += 1) {
      // More names than it keeps: each is still taken, each rebound name still refused.
      for (let index = 0; index < 100; index += 1) {
        expect(policy.hostAllowed(`host${index}.example.org:8003`)).toBe(true);
        expect(policy.hostAllowed(`host${index}.example.org.evil.test`)).toBe(false);
      }
      expect(policy.hostAllowed("localhost:8003")).toBe(true);
      expect(policy.hostAllowed(EVIL)).toBe(false);
      expect(policy.hostAllowed("LOCALHOST.")).toBe(true);
      expect(policy.hostAllowed("localhost:8003/x")).toBe(false);
      expect(policy.hostAllowed(undefined)).toBe(false);
    }
  });

  it("describes what it answers to", () => {
    expect(new HostPolicy({ listen: "127.0.0.1", allowed: [] }).describe()).toBe("localhost, 127.0.0.1, [::1]");
    expect(new HostPolicy({ listen: "0.0.0.0", allowed: [] }).strict).toBe(false);
    expect(new HostPolicy({ listen: "::1", allowed: ["troupe.lan"], publicUrl: "https://troupe.example.com/base" }).describe()).toBe("localhost, 127.0.0.1, [::1], troupe.lan, troupe.example.com");
  });
});
