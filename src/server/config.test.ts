import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { authPolicy, digestOf, isLoopback, parseApiKeys, parseServerConfig, serverConfigFromEnv } from "./config.js";

describe("parseApiKeys", () => {
  it("reads name:key entries, the key everything after the first ':' (base64 '=' padding and ':' included)", () => {
    const keys = parseApiKeys(" alice:P2DNbwhv9ajp9rEF5vFfjg== , bob:a:b=c,, ");
    expect(keys.map((key) => key.principal.id)).toEqual(["alice", "bob"]);
    expect(keys[0]?.digest).toEqual(digestOf("P2DNbwhv9ajp9rEF5vFfjg=="));
    expect(keys[1]?.digest).toEqual(digestOf("a:b=c"));
    expect(parseApiKeys(undefined)).toEqual([]);
  });

  it("refuses the old ambiguous forms by position, never printing the key", () => {
    // On main this entry became the principal P2DNbwhv9ajp9rEF5vFfjg with the key "=".
    const secret = "P2DNbwhv9ajp9rEF5vFfjg==";
    const failure = (text: string): string => {
      try {
        parseApiKeys(text);
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error(`${text} was accepted`);
    };
    const padded = failure(`alice:k1,${secret}`);
    expect(padded).toMatch(/^TROUPE_API_KEYS entry 2: no name; each entry is name:key/);
    expect(padded).not.toContain("P2DN");
    const unnamed = failure("s3cret-token");
    expect(unnamed).toMatch(/entry 1: no name.*belong to key-[\da-f]{12}: use that as its name/);
    expect(unnamed).not.toContain("s3cret");
    expect(failure("alice=s3cret")).not.toContain("s3cret");
    expect(failure("al ice:s3cret")).toMatch(/entry 1: what comes before the first ':' is not a name/);
    expect(failure("al ice:s3cret")).not.toContain("s3cret");
  });

  it("refuses an empty key, a key an HTTP header cannot carry, the open API's name, a twice-used name or key", () => {
    expect(() => parseApiKeys("alice:")).toThrow(/entry 1 \(alice\): no key/);
    expect(() => parseApiKeys("alice:caf\u00e9")).toThrow(/not printable ASCII/);
    expect(() => parseApiKeys("local:k1")).toThrow(/entry 1 \(local\): the name "local" is the open API's caller/);
    expect(() => parseApiKeys("LOCAL:k1")).toThrow(/is the open API's caller/);
    expect(() => parseApiKeys("alice:one,alice:two")).toThrow(/entry 2 \(alice\): the name is already given to TROUPE_API_KEYS entry 1/);
    expect(() => parseApiKeys("alice:same,bob:same")).toThrow(/entry 2 \(bob\): the same key as TROUPE_API_KEYS entry 1 \(alice\)/);
  });

  it("reads a keys file: one name:key a line, commas and inner spaces in keys, comments skipped", () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-keys-"));
    const file = path.join(directory, "keys");
    writeFileSync(file, "# operators\nalice:a, b; c==\n\ncarol:k2\n");
    const policy = authPolicy(parseServerConfig({ apiKeysFile: file, apiKeys: "dave:k3" }));
    expect(policy.keys.map((key) => key.principal.id)).toEqual(["dave", "alice", "carol"]);
    expect(policy.keys[1]?.digest).toEqual(digestOf("a, b; c=="));
    writeFileSync(file, "alice:k1\nbob\n");
    expect(() => authPolicy(parseServerConfig({ apiKeysFile: file }))).toThrow(new RegExp(`^${file.replace(/[/.]/g, "\\$&")} line 2: no name`));
    expect(() => authPolicy(parseServerConfig({ apiKeysFile: path.join(directory, "missing") }))).toThrow(/TROUPE_API_KEYS_FILE: cannot read .*ENOENT/);
    rmSync(directory, { recursive: true, force: true });
  });
});

describe("authPolicy", () => {
  const policy = (input: Parameters<typeof parseServerConfig>[0]) => authPolicy(parseServerConfig(input));

  it("leaves loopback open without keys, and requires keys once they are set or asked for", () => {
    expect(policy({ host: "127.0.0.1" }).required).toBe(false);
    expect(policy({ host: "localhost", apiKeys: "a:k1" }).required).toBe(true);
    expect(() => policy({ host: "::1", requireAuth: true })).toThrow(/requires API keys/);
    expect(policy({ host: "127.0.0.1", apiKeys: "a:k1", requireAuth: false }).required).toBe(false);
  });

  it("requires keys on any other address, and refuses to serve there without them", () => {
    expect(() => policy({ host: "0.0.0.0" })).toThrow(/requires API keys: set TROUPE_API_KEYS/);
    expect(() => policy({ host: "0.0.0.0", apiKeys: "a:k1", requireAuth: false })).toThrow(/cannot be turned off/);
    expect(policy({ host: "0.0.0.0", apiKeys: "a:k1" }).required).toBe(true);
  });

  it("knows loopback addresses", () => {
    expect(["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"].map(isLoopback)).toEqual([true, true, true, true, true]);
    expect(["0.0.0.0", "10.0.0.1", "::", "example.com"].map(isLoopback)).toEqual([false, false, false, false]);
  });
});

describe("server settings", () => {
  it("has the seed's defaults and reads the environment", () => {
    expect(parseServerConfig({})).toMatchObject({ host: "127.0.0.1", port: 8003, maxRunning: 100, rateLimitPerMinute: 100, shutdownGraceMs: 30_000 });
    const fromEnv = parseServerConfig(serverConfigFromEnv({ TROUPE_MAX_RUNNING: "7", TROUPE_RATE_LIMIT: "0", TROUPE_SHUTDOWN_GRACE_MS: "500", TROUPE_REQUIRE_AUTH: "true" }));
    expect(fromEnv).toMatchObject({ maxRunning: 7, rateLimitPerMinute: 0, shutdownGraceMs: 500, requireAuth: true });
  });

  it("names the bad setting", () => {
    expect(() => parseServerConfig({ port: 70_000 })).toThrow(/^port:/);
    expect(() => parseServerConfig(serverConfigFromEnv({ TROUPE_MAX_RUNNING: "0" }))).toThrow(/^maxRunning:/);
    expect(() => parseServerConfig(serverConfigFromEnv({ TROUPE_LOG_LEVEL: "loud" }))).toThrow(/^logLevel:/);
  });
});
