import { describe, expect, it } from "vitest";
import { authPolicy, isLoopback, parseApiKeys, parseServerConfig, serverConfigFromEnv } from "./config.js";

describe("parseApiKeys", () => {
  it("reads named and unnamed keys, and never keeps a key as an id", () => {
    const keys = parseApiKeys(" alice=key-one , key-two ,, ");
    expect(keys.map((key) => key.principal.id)).toEqual(["alice", expect.stringMatching(/^key-[\da-f]{12}$/)]);
    expect(keys[1]?.principal.id).not.toContain("key-two");
    expect(parseApiKeys(undefined)).toEqual([]);
  });

  it("refuses an empty key, a bad name and a duplicate", () => {
    expect(() => parseApiKeys("alice=")).toThrow(/has no key/);
    expect(() => parseApiKeys("a b=key")).toThrow(/not a valid name/);
    expect(() => parseApiKeys("alice=one,alice=two")).toThrow(/appears twice/);
  });
});

describe("authPolicy", () => {
  const policy = (input: Parameters<typeof parseServerConfig>[0]) => authPolicy(parseServerConfig(input));

  it("leaves loopback open without keys, and requires keys once they are set or asked for", () => {
    expect(policy({ host: "127.0.0.1" }).required).toBe(false);
    expect(policy({ host: "localhost", apiKeys: "k1" }).required).toBe(true);
    expect(() => policy({ host: "::1", requireAuth: true })).toThrow(/requires API keys/);
    expect(policy({ host: "127.0.0.1", apiKeys: "k1", requireAuth: false }).required).toBe(false);
  });

  it("requires keys on any other address, and refuses to serve there without them", () => {
    expect(() => policy({ host: "0.0.0.0" })).toThrow(/requires API keys: set TROUPE_API_KEYS/);
    expect(() => policy({ host: "0.0.0.0", apiKeys: "k1", requireAuth: false })).toThrow(/cannot be turned off/);
    expect(policy({ host: "0.0.0.0", apiKeys: "k1" }).required).toBe(true);
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
