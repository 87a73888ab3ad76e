import path from "node:path";
import ipaddr from "ipaddr.js";
import { z } from "zod";
import { ConfigError } from "../core/errors.js";
import { loadConfig } from "./config-file.js";
import { McpServers } from "../tools/mcp/mcp-config.js";
import { ApprovalRules, Grant, PermissionLevelName } from "../tools/permissions.js";

/**
 * The `tools` section of the config file (`troupe.config.json` or `.ts`): permissions (default
 * level, role defaults, grants), which calls need a person's approval, execution limits, the
 * code sandbox, fetch rules, search and MCP servers. The rest of the file is config-file.ts's. Keys for online search come from the environment as well (TAVILY_API_KEY,
 * BRAVE_API_KEY, SEARXNG_URL).
 */

/** A grant in a role's defaults: the agent is the role. */
const RoleGrant = Grant.omit({ agent: true }).extend({ grantedBy: z.string().min(1).default("config:roles") }).strict();

const cidr = z.string().refine(
  (text) => {
    try {
      if (text.includes("/")) ipaddr.parseCIDR(text);
      else ipaddr.parse(text);
      return true;
    } catch {
      return false;
    }
  },
  { error: "an IP address or CIDR range, e.g. 127.0.0.1/32" },
);

export const ToolsConfig = z
  .object({
    permissions: z
      .object({
        /** The level every agent holds without a grant (NONE: only pure tools such as the calculator). */
        defaultLevel: PermissionLevelName.default("NONE"),
        /** Replaces an agent's built-in role defaults. */
        roles: z.record(z.string(), z.array(RoleGrant)).default({}),
        grants: z.array(Grant).default([]),
      })
      .strict()
      .default({ defaultLevel: "NONE", roles: {}, grants: [] }),
    approval: ApprovalRules.default({ tools: [], riskLevels: ["high"] }),
    execution: z
      .object({ concurrency: z.number().int().min(1).max(64).default(5) })
      .strict()
      .default({ concurrency: 5 }),
    /** What the workspace may hold: bytes of files, and files and folders (1 GiB and 100,000 by default). */
    quota: z
      .object({ maxBytes: z.number().int().positive(), maxFiles: z.number().int().positive() })
      .partial()
      .strict()
      .default({}),
    sandbox: z
      .object({
        timeoutMs: z.number().int().positive(),
        maxTimeoutMs: z.number().int().positive(),
        memoryMb: z.number().int().min(16).max(16_384),
        stackKb: z.number().int().min(64).max(65_536),
        maxProcesses: z.number().int().min(1).max(4_096),
        maxFileBytes: z.number().int().positive(),
        maxOutputBytes: z.number().int().positive(),
        maxResultBytes: z.number().int().positive().max(64 * 1024 * 1024),
        bwrapPath: z.string().min(1),
        pythonPath: z.string().min(1),
        nodePath: z.string().min(1),
      })
      .partial()
      .strict()
      .default({}),
    fetch: z
      .object({
        allowHosts: z.array(z.string().min(1)),
        denyHosts: z.array(z.string().min(1)),
        /** Private addresses allowed anyway (a local test server); the default blocks them all. */
        allowAddresses: z.array(cidr),
        timeoutMs: z.number().int().positive(),
        maxBytes: z.number().int().positive().max(100 * 1024 * 1024),
        maxRedirects: z.number().int().min(0).max(20),
      })
      .partial()
      .strict()
      .default({}),
    search: z
      .object({
        knowledge: z.array(z.string().min(1)),
        includeWorkspace: z.boolean(),
        provider: z.enum(["local", "tavily", "brave", "searxng"]),
        tavilyApiKey: z.string().min(1),
        tavilyUrl: z.url(),
        braveApiKey: z.string().min(1),
        braveUrl: z.url(),
        searxngUrl: z.url(),
        timeoutMs: z.number().int().positive(),
      })
      .partial()
      .strict()
      .default({}),
    mcp: z
      .object({ servers: McpServers.default({}) })
      .strict()
      .default({ servers: {} }),
    /**
     * Tools found by retrieval: a worker whose agent may use more than `threshold` tools is offered
     * the `topK` most relevant to its subtask (BM25, with the provider's embeddings when
     * `embeddings` and it has them) and find_tools for more.
     */
    discovery: z
      .object({
        threshold: z.number().int().min(1).max(10_000).default(15),
        topK: z.number().int().min(1).max(50).default(5),
        embeddings: z.boolean().default(true),
      })
      .strict()
      .default({ threshold: 15, topK: 5, embeddings: true }),
  })
  .strict();
export type ToolsConfig = z.infer<typeof ToolsConfig>;

export interface LoadedToolsConfig {
  config: ToolsConfig;
  /** The file it came from, when there was one. */
  file?: string;
}

export interface LoadToolsConfigOptions {
  /** An explicit file; otherwise TROUPE_CONFIG, then the config file found in `cwd` (see config-file.ts). */
  file?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

function fromEnv(env: NodeJS.ProcessEnv, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value) return value;
  }
  return undefined;
}

/**
 * Reads the config file with the one loader (`loadConfig`: JSON or TypeScript, validated) and
 * resolves its tools section; a bad file is a ConfigError naming the file and the field.
 */
export async function loadToolsConfig(options: LoadToolsConfigOptions = {}): Promise<LoadedToolsConfig> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const { config, file } = await loadConfig(cwd, options.file ?? fromEnv(env, "TROUPE_CONFIG"));
  return { config: resolveToolsConfig(config.tools, { base: file ? path.dirname(file) : cwd, env, file }), ...(file ? { file } : {}) };
}

/**
 * Validates a `tools` section (from a file, or given in code) and completes it: folders made
 * absolute against `base`, search keys taken from the environment when the section has none.
 */
export function resolveToolsConfig(section: unknown, options: { base?: string; env?: NodeJS.ProcessEnv; file?: string } = {}): ToolsConfig {
  const env = options.env ?? process.env;
  const base = options.base ?? process.cwd();
  const result = ToolsConfig.safeParse(section ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = ["tools", ...(issue?.path ?? [])].join(".");
    throw new ConfigError("invalid_config", `${options.file ?? "config"}: ${where}: ${issue?.message ?? "invalid value"}`, { file: options.file, path: where });
  }
  const config = result.data;
  config.search.knowledge = (config.search.knowledge ?? ["knowledge"]).map((folder) => path.resolve(base, folder));
  config.search.tavilyApiKey ??= fromEnv(env, "TAVILY_API_KEY");
  config.search.braveApiKey ??= fromEnv(env, "BRAVE_API_KEY", "BRAVE_SEARCH_API_KEY");
  config.search.searxngUrl ??= fromEnv(env, "SEARXNG_URL");
  for (const server of Object.values(config.mcp.servers)) {
    if ("command" in server && server.cwd) server.cwd = path.resolve(base, server.cwd);
  }
  return config;
}
