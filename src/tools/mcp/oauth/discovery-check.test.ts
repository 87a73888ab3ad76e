import { describe, expect, it } from "vitest";
import { checkDiscovery } from "./discovery-check.js";
import { refusalOf } from "./oauth-fetch.js";

const RULES = { allowHosts: [], denyHosts: [], allowAddresses: [] };
const SERVER = new URL("https://mcp.example.com/mcp");
const metadata = (issuer: string, overrides: Record<string, string> = {}) => ({
  issuer,
  authorization_endpoint: `${issuer}/authorize`,
  token_endpoint: `${issuer}/token`,
  registration_endpoint: `${issuer}/register`,
  response_types_supported: ["code"],
  ...overrides,
});
const prm = { resource: SERVER.href, authorization_servers: ["https://auth.example.com"] };

describe("what OAuth discovery found, checked before anything is sent to it", () => {
  it("takes an authorization server that names itself, with its endpoints on its own origin", () => {
    expect(() => checkDiscovery({ authorizationServerUrl: "https://auth.example.com", resourceMetadata: prm, authorizationServerMetadata: metadata("https://auth.example.com") }, SERVER, RULES, [])).not.toThrow();
    // A token endpoint elsewhere, when the config trusts its origin.
    const split = metadata("https://auth.example.com", { token_endpoint: "https://tokens.example.net/token" });
    expect(() => checkDiscovery({ authorizationServerUrl: "https://auth.example.com", resourceMetadata: prm, authorizationServerMetadata: split }, SERVER, RULES, [])).toThrow(/token_endpoint https:\/\/tokens\.example\.net\/token is on another origin/);
    expect(() => checkDiscovery({ authorizationServerUrl: "https://auth.example.com", resourceMetadata: prm, authorizationServerMetadata: split }, SERVER, RULES, ["https://tokens.example.net"])).not.toThrow();
  });

  it("refuses an issuer mix-up, metadata at internal addresses, and plain http away from loopback", () => {
    expect(() => checkDiscovery({ authorizationServerUrl: "https://auth.example.com", resourceMetadata: prm, authorizationServerMetadata: metadata("https://evil.example.com") }, SERVER, RULES, [])).toThrow(/names the issuer "https:\/\/evil\.example\.com"/);
    expect(() => checkDiscovery({ authorizationServerUrl: "https://10.0.0.5/", resourceMetadata: prm }, SERVER, RULES, [])).toThrow(/refused: 10\.0\.0\.5 is a private address/);
    expect(() => checkDiscovery({ authorizationServerUrl: "http://auth.example.com/", resourceMetadata: prm }, SERVER, RULES, [])).toThrow(/plain http/);
    const internal = metadata("https://auth.example.com", { registration_endpoint: "https://169.254.169.254/register" });
    expect(() => checkDiscovery({ authorizationServerUrl: "https://auth.example.com", resourceMetadata: prm, authorizationServerMetadata: internal }, SERVER, RULES, ["https://169.254.169.254"])).toThrow(/registration_endpoint https:\/\/169\.254\.169\.254\/register: refused: 169\.254\.169\.254 is a linkLocal address/);
    // Without protected-resource metadata (the 2025-03-26 spec) the issuer may add a path on the server's own origin, and no more.
    expect(() => checkDiscovery({ authorizationServerUrl: "https://mcp.example.com/", authorizationServerMetadata: metadata("https://mcp.example.com/oauth") }, SERVER, RULES, [])).not.toThrow();
    expect(() => checkDiscovery({ authorizationServerUrl: "https://mcp.example.com/", authorizationServerMetadata: metadata("https://auth.example.com") }, SERVER, RULES, [])).toThrow(/names the issuer/);
  });

  it("lets URLs a server names reach loopback only from a loopback server, and carry no credentials", () => {
    const local = new URL("http://127.0.0.1:3000/mcp");
    expect(refusalOf(new URL("http://127.0.0.1:4000/token"), local, RULES)).toBeUndefined();
    expect(refusalOf(new URL("http://localhost:4000/token"), local, RULES)).toMatch(/internal host/);
    expect(refusalOf(new URL("http://127.0.0.1:4000/token"), SERVER, RULES)).toMatch(/plain http/);
    expect(refusalOf(new URL("https://user:pw@auth.example.com/token"), SERVER, RULES)).toMatch(/user name or password/);
    expect(refusalOf(new URL("https://auth.example.com/token"), SERVER, { ...RULES, denyHosts: ["example.com"] })).toMatch(/deny list/);
  });
});
