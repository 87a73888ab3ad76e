import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolOutcome } from "../define-tool.js";
import { fetch as undiciFetch } from "undici";
import { blockedAddress } from "../net/address-guard.js";
import { createGuardedDispatcher } from "../net/guarded-dispatcher.js";
import { ToolRegistry } from "../registry.js";
import { createHttpFetchTool } from "./http-fetch.js";

let server: Server;
let base = "";
let hits: string[] = [];

function handler(request: IncomingMessage, response: ServerResponse): void {
  hits.push(`${request.method} ${request.url}`);
  const url = new URL(request.url ?? "/", "http://x");
  switch (url.pathname) {
    case "/page":
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end("<html><head><title>Fixture page</title><style>p{}</style></head><body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href='/x'>link</a>.</p><script>var x</script></body></html>");
      return;
    case "/json":
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ ok: true }));
      return;
    case "/echo": {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        response.writeHead(200, { "content-type": "text/plain" });
        response.end(`${request.method} ${body}`);
      });
      return;
    }
    case "/big":
      response.writeHead(200, { "content-type": "text/plain" });
      response.end("x".repeat(100_000));
      return;
    case "/redirect":
      response.writeHead(302, { location: url.searchParams.get("to") ?? "/page" });
      response.end();
      return;
    case "/missing":
      response.writeHead(404, { "content-type": "text/plain" });
      response.end("nothing here");
      return;
    default:
      response.writeHead(500);
      response.end();
  }
}

beforeAll(async () => {
  server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => {
  server.close();
});

const defaults = new ToolRegistry().register(createHttpFetchTool() as never);
// Loopback allowed for this test server only, through configuration.
const local = new ToolRegistry().register(createHttpFetchTool({ allowAddresses: ["127.0.0.1/32"], maxBytes: 10_000 }) as never);
const fetchWith = (registry: ToolRegistry, args: Record<string, unknown>): Promise<ToolOutcome> => registry.call("http_fetch", args, { workspace: "/tmp" });

describe("http_fetch: SSRF corpus (default configuration)", () => {
  it.each([
    ["loopback", () => `${base}/page`],
    ["localhost", () => `${base.replace("127.0.0.1", "localhost")}/page`],
    ["decimal loopback", () => `${base.replace("127.0.0.1", "2130706433")}/page`],
    ["hex loopback", () => `${base.replace("127.0.0.1", "0x7f000001")}/page`],
    ["dotted hex loopback", () => `${base.replace("127.0.0.1", "0x7f.0x0.0x0.0x1")}/page`],
    ["octal loopback", () => `${base.replace("127.0.0.1", "0177.0.0.01")}/page`],
    ["short loopback", () => `${base.replace("127.0.0.1", "127.1")}/page`],
    ["IPv6 loopback", () => `${base.replace("127.0.0.1", "[::1]")}/page`],
    ["IPv6-mapped loopback", () => `${base.replace("127.0.0.1", "[::ffff:127.0.0.1]")}/page`],
    ["IPv6-mapped loopback in hex", () => `${base.replace("127.0.0.1", "[::ffff:7f00:1]")}/page`],
    ["the unspecified address", () => `${base.replace("127.0.0.1", "0.0.0.0")}/page`],
    ["cloud metadata", () => "http://169.254.169.254/latest/meta-data/"],
    ["cloud metadata in decimal", () => "http://2852039166/latest/meta-data/"],
    ["GCP metadata name", () => "http://metadata.google.internal/computeMetadata/v1/"],
    ["Alibaba metadata (carrier-grade NAT)", () => "http://100.100.100.200/latest/meta-data/"],
    ["AWS IPv6 metadata", () => "http://[fd00:ec2::254]/latest/meta-data/"],
    ["a private network", () => "http://10.0.0.1/"],
    ["a private network (192.168)", () => "http://192.168.1.1/"],
    ["a private network (172.16)", () => "http://172.16.5.4/"],
    ["link-local IPv6", () => "http://[fe80::1]/"],
    ["IPv4-compatible IPv6 loopback", () => `${base.replace("127.0.0.1", "[::127.0.0.1]")}/page`],
    ["IPv4-compatible IPv6 metadata in hex", () => "http://[::a9fe:a9fe]/latest/meta-data/"],
    ["IPv4-compatible IPv6 private network", () => "http://[::10.0.0.1]/"],
  ])("refuses %s before any connection", async (_name, url) => {
    hits = [];
    const outcome = await fetchWith(defaults, { url: url() });
    expect(outcome).toMatchObject({ ok: false, error: { code: "blocked_address" } });
    expect(hits).toEqual([]);
  });

  it("refuses a name that resolves to a private address when it connects (DNS answers are checked)", async () => {
    // Straight to the dispatcher, past the URL check, so only the connect-time guard stands.
    const port = new URL(base).port;
    hits = [];
    const blocked = await undiciFetch(`http://localhost:${port}/page`, { dispatcher: createGuardedDispatcher({ allowHosts: [], denyHosts: [], allowAddresses: [] }) }).then(
      () => "connected",
      (error: Error) => String((error.cause as NodeJS.ErrnoException | undefined)?.code),
    );
    expect(blocked).toBe("blocked_address");
    expect(hits).toEqual([]);
    const allowed = await undiciFetch(`http://localhost:${port}/json`, { dispatcher: createGuardedDispatcher({ allowHosts: [], denyHosts: [], allowAddresses: ["127.0.0.1/32", "::1/128"] }) });
    expect(await allowed.json()).toEqual({ ok: true });
    expect(hits).toEqual(["GET /json"]);
  });

  it("refuses redirects to private addresses, whoever allowed the first hop", async () => {
    // The first hop is allowed (loopback, by configuration); the redirect target is not.
    const partly = new ToolRegistry().register(createHttpFetchTool({ allowAddresses: ["127.0.0.1/32"] }) as never);
    for (const target of ["http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "http://10.1.2.3/", "http://0x7f000002/"]) {
      hits = [];
      const outcome = await fetchWith(partly, { url: `${base}/redirect?to=${encodeURIComponent(target)}` });
      expect(outcome, target).toMatchObject({ ok: false, error: { code: "blocked_address" } });
      expect(hits).toEqual([`GET /redirect?to=${encodeURIComponent(target)}`]);
    }
  });

  it("refuses other schemes and hosts on the deny list or off the allow list", async () => {
    expect(await fetchWith(defaults, { url: "file:///etc/passwd" })).toMatchObject({ ok: false, error: { code: "invalid_arguments" } });
    const listed = new ToolRegistry().register(createHttpFetchTool({ allowHosts: ["example.org"], denyHosts: ["bad.example.org"] }) as never);
    expect(await fetchWith(listed, { url: "https://bad.example.org/" })).toMatchObject({ ok: false, error: { code: "host_denied", message: "bad.example.org is on the deny list" } });
    expect(await fetchWith(listed, { url: "https://example.com/" })).toMatchObject({ ok: false, error: { code: "host_denied", message: "example.com is not on the allow list" } });
  });

  it("classifies addresses in every spelling", () => {
    const rules = { allowAddresses: [] };
    for (const address of ["127.0.0.1", "::1", "::ffff:127.0.0.1", "::ffff:a9fe:a9fe", "::127.0.0.1", "::a9fe:a9fe", "[::7f00:1]", "::0.0.0.2", "169.254.169.254", "10.0.0.1", "fd00:ec2::254", "0.0.0.0", "::", "224.0.0.1", "100.64.0.1"]) {
      expect(blockedAddress(address, rules), address).toBeDefined();
    }
    for (const address of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"]) expect(blockedAddress(address, rules), address).toBeUndefined();
    expect(blockedAddress("127.0.0.1", { allowAddresses: ["127.0.0.0/8"] })).toBeUndefined();
    // A public IPv4 in the IPv4-compatible form is that public host.
    expect(blockedAddress("::8.8.8.8", rules)).toBeUndefined();
  });

  it("refuses internal names even when allowAddresses admits private addresses", async () => {
    const permissive = new ToolRegistry().register(createHttpFetchTool({ allowAddresses: ["127.0.0.0/8", "169.254.0.0/16", "::1/128", "10.0.0.0/8"] }) as never);
    for (const host of ["localhost", "metadata.google.internal", "metadata", "db.internal", "printer.local", "app.localhost"]) {
      hits = [];
      const outcome = await fetchWith(permissive, { url: `http://${host}:${new URL(base).port}/page` });
      expect(outcome, host).toMatchObject({ ok: false, error: { code: "blocked_address", message: expect.stringContaining("names an internal host") } });
      expect(hits).toEqual([]);
    }
    // The literal address it admits is still reachable.
    expect(await fetchWith(permissive, { url: `${base}/json` })).toMatchObject({ ok: true });
  });
});

describe("http_fetch against a loopback server allowed by configuration", () => {
  it("turns HTML into text and keeps the title", async () => {
    const outcome = await fetchWith(local, { url: `${base}/page` });
    expect(outcome).toMatchObject({ ok: true, value: { status: 200, contentType: "text/html", title: "Fixture page" } });
    const text = (outcome as { value: { text: string } }).value.text;
    expect(text).toContain("HELLO");
    expect(text).toContain("Some bold text and a link.");
    expect(text).not.toContain("<");
    expect(text).not.toContain("var x");
  });

  it("follows allowed redirects, POSTs (which needs WRITE), cuts large bodies and reports HTTP errors", async () => {
    expect(await fetchWith(local, { url: `${base}/redirect?to=/json` })).toMatchObject({ ok: true, value: { text: '{"ok":true}', redirects: [`${base}/redirect?to=/json`] } });
    expect(await fetchWith(local, { url: `${base}/echo`, method: "POST", body: "payload" })).toMatchObject({ ok: true, value: { text: "POST payload" } });
    expect(await fetchWith(local, { url: `${base}/big` })).toMatchObject({ ok: true, value: { bytes: 10_000, truncated: true } });
    expect(await fetchWith(local, { url: `${base}/missing` })).toMatchObject({ ok: false, error: { code: "http_error", message: expect.stringContaining("404") } });
    expect(createHttpFetchTool().levelFor?.({ url: base, method: "POST", format: "text" })).toBe("WRITE");
  });
});
