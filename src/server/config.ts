import { isIP } from "node:net";
import { z } from "zod";
import { ConfigError } from "../core/errors.js";
import { type ApiKey, keyFileEntries, keyListEntries, parseKeyEntries } from "./api-keys.js";

export { type ApiKey, digestOf, LOCAL_PRINCIPAL, parseApiKeys, type Principal } from "./api-keys.js";

/** Whether a host to bind to only accepts connections from this machine. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  if (bare === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return bare === "::1";
  return false;
}

const count = (minimum: number) => z.coerce.number().int().min(minimum);

/** The server's settings: flags first, then the environment, then these defaults (docs/configuration.md, "Limits and defaults"). */
export const ServerConfig = z.object({
  host: z.string().min(1).default("127.0.0.1"),
  port: count(0).max(65_535).default(8003),
  /** Raw `TROUPE_API_KEYS`: comma-separated `name:key`. */
  apiKeys: z.string().optional(),
  /** `TROUPE_API_KEYS_FILE`: a file of `name:key` lines. */
  apiKeysFile: z.string().min(1).optional(),
  /** Require keys on loopback too; on any other address they are always required. */
  requireAuth: z.boolean().optional(),
  /** Raw `TROUPE_ADMINS`: the principals (API key names) that may change runtime grants. */
  admins: z.string().optional(),
  /** At most this many runs execute at once; the rest wait in the queue. */
  maxRunning: count(1).default(100),
  /** At most this many of them one API key's; waiting runs start round-robin across keys (default `maxRunning`). */
  maxRunningPerKey: count(1).optional(),
  /**
   * Runs this process drives at once (its worker slots): on Postgres, 0 makes an API process
   * that only accepts, queries and streams; default `maxRunning`. On SQLite the server is the only
   * process: it is the same as `maxRunning`, and 0 is refused.
   */
  workers: count(0).optional(),
  /** Requests per minute per principal under /api/v1; 0 turns the limit off. */
  rateLimitPerMinute: count(0).default(100),
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: count(1024).default(256 * 1024),
  /** Event-loop delay above which /api/v1 answers 503; 0 turns the check off. */
  maxEventLoopDelayMs: count(0).default(1_000),
  /** How long a shutdown lets running steps reach a checkpoint. */
  shutdownGraceMs: count(0).default(30_000),
  /**
   * A run whose process died this many times in a row while it ran is failed on the next start
   * instead of being taken up again: a task that crashes troupe must not crash every restart.
   */
  maxCrashes: count(1).default(2),
  /** Seconds sent in Retry-After with a 503 (overload, shutting down). */
  retryAfterSeconds: count(1).default(5),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** The base URL clients reach the server at (behind a proxy), for the A2A agent card; by default the one each request came to. */
  publicUrl: z.url({ protocol: /^https?$/ }).optional(),
  /**
   * Raw `TROUPE_ALLOWED_HOSTS` / `--allowed-hosts`: comma-separated host names the server answers
   * to besides its own addresses (`.example.com` for a domain, `*` for any); replaces the config
   * file's `server.allowedHosts`. See host-policy.ts.
   */
  allowedHosts: z.string().optional(),
});
export type ServerConfig = z.infer<typeof ServerConfig>;
export type ServerConfigInput = z.input<typeof ServerConfig>;

/** The environment variables the server reads (besides the engine's). */
export function serverConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ServerConfigInput {
  const pick = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const requireAuth = pick("TROUPE_REQUIRE_AUTH");
  return {
    apiKeys: pick("TROUPE_API_KEYS"),
    admins: pick("TROUPE_ADMINS"),
    apiKeysFile: pick("TROUPE_API_KEYS_FILE"),
    requireAuth: requireAuth === undefined ? undefined : /^(1|true|yes)$/i.test(requireAuth),
    maxRunning: pick("TROUPE_MAX_RUNNING") as never,
    maxRunningPerKey: pick("TROUPE_MAX_RUNNING_PER_KEY") as never,
    workers: pick("TROUPE_WORKERS") as never,
    rateLimitPerMinute: pick("TROUPE_RATE_LIMIT") as never,
    maxEventLoopDelayMs: pick("TROUPE_MAX_EVENT_LOOP_DELAY_MS") as never,
    shutdownGraceMs: pick("TROUPE_SHUTDOWN_GRACE_MS") as never,
    maxCrashes: pick("TROUPE_MAX_CRASHES") as never,
    logLevel: pick("TROUPE_LOG_LEVEL") as never,
    publicUrl: pick("TROUPE_PUBLIC_URL"),
    allowedHosts: pick("TROUPE_ALLOWED_HOSTS"),
  };
}

/** Parses the settings; a bad value is a ConfigError naming it. */
export function parseServerConfig(input: ServerConfigInput): ServerConfig {
  const defined = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
  const parsed = ServerConfig.safeParse(defined);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError("invalid_server_config", `${String(issue?.path[0] ?? "server setting")}: ${issue?.message ?? "invalid value"}`);
  }
  return parsed.data;
}

/** Who may call the API, decided once at start. */
export interface AuthPolicy {
  required: boolean;
  keys: ApiKey[];
}

/**
 * Keys are required on every address but loopback, and on loopback when keys are configured or
 * `requireAuth` is set. Requiring keys without any configured is a configuration error.
 */
export function authPolicy(config: ServerConfig): AuthPolicy {
  const keys = parseKeyEntries([...keyListEntries(config.apiKeys), ...(config.apiKeysFile ? keyFileEntries(config.apiKeysFile) : [])]);
  const loopback = isLoopback(config.host);
  const required = !loopback || keys.length > 0 || config.requireAuth === true;
  if (config.requireAuth === false && !loopback) {
    throw new ConfigError("auth_required", `API keys cannot be turned off on ${config.host}: only a loopback address may serve without them`);
  }
  if (required && config.requireAuth !== false && keys.length === 0) {
    // On loopback it is --require-auth that asks for keys: binding elsewhere is no way out of it.
    throw new ConfigError(
      "api_keys_missing",
      loopback
        ? `--require-auth (TROUPE_REQUIRE_AUTH) requires API keys: set TROUPE_API_KEYS (comma-separated, each "name:key") or TROUPE_API_KEYS_FILE, or serve ${config.host} without --require-auth`
        : `serving on ${config.host} requires API keys: set TROUPE_API_KEYS (comma-separated, each "name:key") or TROUPE_API_KEYS_FILE, or bind to 127.0.0.1`,
    );
  }
  return { required: required && config.requireAuth !== false, keys };
}
