import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parse as parseJsonc, printParseErrorCode, type ParseError } from "jsonc-parser";
import { z } from "zod";
import { Budget } from "../core/budget.js";
import { ConfigError, errorMessage } from "../core/errors.js";
import { parseAllowedHost } from "../core/host-names.js";
import { RetentionConfig } from "../core/retention.js";
import { ReviewMode } from "../core/review-mode.js";
import { ScheduleInput, ScheduleLimits } from "../core/schedule.js";
import { TaskTemplates } from "../core/task-template.js";
import { WebhooksConfig } from "../core/webhook.js";
import { readUserFileSync } from "../core/user-files.js";
import { TrustConfig } from "../tools/trust-config.js";
import { RemoteAgentConfig } from "../tools/a2a/remote-agent-config.js";

/** How a provider is asked for machine-read answers: JSON-schema response format, forced tool call, or JSON mode. */
export const StructuredMethod = z.enum(["jsonSchema", "functionCalling", "jsonMode"]);
export type StructuredMethod = z.infer<typeof StructuredMethod>;

/** How a planner writes its plan: the compact wire (a step a line of text) or the JSON wire (strict structured output). */
export const PlanWire = z.enum(["compact", "json"]);
export type PlanWire = z.infer<typeof PlanWire>;

/** Settings of one provider, or (with `type`) a new named endpoint such as `deepseek`. */
export const ProviderSettings = z
  .object({
    /** Makes a new provider id that speaks this protocol (`openai-compatible` for DeepSeek, Kimi, GLM, Qwen, vLLM…). */
    type: z.enum(["openai", "anthropic", "ollama", "openai-compatible"]).optional(),
    baseUrl: z.string().min(1).optional(),
    /** The environment variable holding the API key (the key itself never goes in a file). */
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "apiKeyEnv is the name of an environment variable" }).optional(),
    defaultModel: z.string().min(1).optional(),
    structuredOutput: StructuredMethod.optional(),
    /** How its planner writes a plan: `compact` (a step a line of text) or `json` (strict structured output); see docs/runs.md. */
    planWire: PlanWire.optional(),
    /** Whether structured answers ask for strict schema adherence where the method has it (false for a server that refuses `strict`). */
    strict: z.boolean().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    /** The model that makes embeddings for tool discovery (OpenAI: text-embedding-3-small by default; Ollama: none unless named); null: none. */
    embeddingModel: z.string().min(1).nullable().optional(),
    /** The most tokens one answer may take (Anthropic: 4,096 by default); an answer cut off at it is asked again with twice as many. */
    maxTokens: z.number().int().min(16).max(1_000_000).optional(),
    /** Reasoning models (OpenAI o-series and gpt-5): how hard they think (`reasoning_effort`). */
    reasoningEffort: z.enum(["minimal", "low", "medium", "high"]).optional(),
    /** Anthropic extended thinking: the tokens a model may think with before it answers (at least 1,024); its thinking blocks are kept and sent back with tool results. */
    thinkingBudget: z.number().int().min(1_024).max(200_000).optional(),
    /** Anthropic: mark prompt-cache breakpoints (the system prompt and the latest message); true by default. */
    promptCaching: z.boolean().optional(),
    /** false: answers come in one piece (for a server that streams badly); the synthesizer's answer then does not stream either. */
    streaming: z.boolean().optional(),
    /** The model's context window in tokens, when troupe's table does not know it (a prompt over it is compacted first). */
    contextWindow: z.number().int().min(1_000).max(10_000_000).optional(),
  })
  .strict();
export type ProviderSettings = z.infer<typeof ProviderSettings>;

/** A price in US dollars per million tokens. */
export const ModelPrice = z
  .object({
    input: z.number().min(0, { error: "a price cannot be negative" }),
    output: z.number().min(0, { error: "a price cannot be negative" }),
    /** Prompt tokens served from the provider's cache (default: the input price). */
    cachedInput: z.number().min(0, { error: "a price cannot be negative" }).optional(),
    /** Prompt tokens written to the cache, where the provider charges for that (Anthropic; default: the input price). */
    cacheWrite: z.number().min(0, { error: "a price cannot be negative" }).optional(),
  })
  .strict();
export type ModelPrice = z.infer<typeof ModelPrice>;

const ModelSpec = z.string().trim().min(1, { error: "a model is `provider:model` or a model name" });

/** An agent declared in the config file: what the planner is told, what it may use, its model and its instructions. */
export const AgentConfig = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, { error: "an agent name is lower-case letters, digits, '_' or '-' (at most 32)" }),
    description: z.string().trim().min(1).max(500),
    /** What it is good at: the planner sees them, and a subtask asking for one goes to the least busy agent that has it. */
    capabilities: z.array(z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, { error: "a capability is lower-case letters, digits and '-'" })).max(20).default([]),
    /** Tools it is granted, each at the level it needs (its role defaults). */
    tools: z.array(z.string().min(1)).max(200).default([]),
    /** Patterns with a level, as role defaults (`{ "tool": "docs.*", "level": "READ" }`). */
    grants: z.array(z.object({ tool: z.string().min(1), level: z.enum(["NONE", "READ", "WRITE", "EXECUTE", "ADMIN"]) }).strict()).max(50).optional(),
    /** Its own model (`provider:model`, or a model of the main provider). */
    model: ModelSpec.optional(),
    /** Whose model it uses when it names none (default: worker). */
    role: z.enum(["planner", "worker", "critic", "synthesizer"]).optional(),
    /** Its instructions: how it works, what it answers with. */
    prompt: z.string().trim().min(1).max(4_000),
  })
  .strict();
export type AgentConfig = z.infer<typeof AgentConfig>;


/** An entry of `agents`: a remote agent when it names an `a2a` card, otherwise an agent declared here. */
export const AgentEntry = z.unknown().transform((value, context): AgentConfig | RemoteAgentConfig => {
  const remote = typeof value === "object" && value !== null && "a2a" in value;
  const parsed = (remote ? RemoteAgentConfig : AgentConfig).safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) context.addIssue({ code: "custom", message: issue.message, path: issue.path as PropertyKey[] });
  return z.NEVER;
});

/** Whether a config agent is a remote (A2A) one. */
export function isRemoteAgent(entry: AgentConfig | RemoteAgentConfig): entry is RemoteAgentConfig {
  return "a2a" in entry;
}

/** The config's remote (A2A) agents. */
export function remoteAgentsOf(config: { agents?: Array<AgentConfig | RemoteAgentConfig> | undefined }): RemoteAgentConfig[] {
  return (config.agents ?? []).filter(isRemoteAgent);
}

/** A voter of `troupe decide` by default: an agent (voting in its role, with its model), a model, or both; and its weight. */
export const VoterConfig = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][\w.:-]{0,63}$/, { error: "a voter name is letters, digits, '.', '_', ':' or '-'" }),
    agent: z.string().min(1).optional(),
    model: ModelSpec.optional(),
    weight: z.number().min(0).max(100).default(1),
  })
  .strict();
export type VoterConfig = z.infer<typeof VoterConfig>;
/** The `memory` section: how much of a thread's history the planner sees, and the long-term store. */
export const MemoryConfig = z
  .object({
    /** Prompt tokens a thread's earlier turns may take in the planner's prompt (default 2,000; 0: none). */
    historyBudget: z.number().int().min(0).max(100_000).optional(),
    /** Prompt tokens of the long-term memories given to the planner (default 400; 0: none). */
    recallBudget: z.number().int().min(0).max(20_000).optional(),
    /** Facts one namespace may hold (default 10,000). */
    maxItems: z.number().int().min(1).max(1_000_000).optional(),
    /** Bytes of one fact (default 4,096). */
    maxItemBytes: z.number().int().min(64).max(65_536).optional(),
    /** `provider:model` of an embeddings model: search is then hybrid (words and meaning). */
    embeddings: ModelSpec.optional(),
  })
  .strict();
export type MemoryConfig = z.infer<typeof MemoryConfig>;

/** `troupe serve`'s settings kept in the file; its flags and environment variables take precedence. */
export const ServerFileConfig = z
  .object({
    /**
     * Host names the server answers to besides its own addresses (the defence against DNS
     * rebinding: docs/http-service.md): a name, `.example.com` for a domain and its subdomains,
     * or `*` for any. `--allowed-hosts` / TROUPE_ALLOWED_HOSTS replace this list.
     */
    allowedHosts: z
      .array(
        z.string().superRefine((entry, context) => {
          try {
            parseAllowedHost(entry, "server.allowedHosts");
          } catch (error) {
            context.addIssue({ code: "custom", message: (error as Error).message });
          }
        }),
      )
      .max(100)
      .optional(),
    /** What one API key may schedule (POST /api/v1/schedules): how many schedules, and how often they fire together. */
    schedules: ScheduleLimits.partial().strict().optional(),
  })
  .strict();
export type ServerFileConfig = z.infer<typeof ServerFileConfig>;

/** `troupe.config.json` or `troupe.config.ts` (its default export). */
export const TroupeConfig = z
  .object({
    /** `provider` or `provider:model`, used by every role without its own. */
    provider: ModelSpec.optional(),
    model: ModelSpec.optional(),
    /** A stronger model for the planner and critic, a cheaper one for workers… */
    roles: z
      .object({ planner: ModelSpec.optional(), worker: ModelSpec.optional(), critic: ModelSpec.optional(), synthesizer: ModelSpec.optional() })
      .strict()
      .optional(),
    /** Tried in order when a role's model still fails after its retries, e.g. `["anthropic:claude-haiku-4-5", "offline"]`. */
    fallbacks: z.array(ModelSpec).max(8).optional(),
    timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
    maxRetries: z.number().int().min(0).max(10).optional(),
    providers: z.record(z.string().regex(/^[a-z][a-z0-9_-]*$/, { error: "a provider id is lower-case letters, digits, '_' or '-'" }), ProviderSettings).optional(),
    /** Prices by `model` or `provider:model`, over the built-in table. */
    prices: z.record(z.string().min(1), ModelPrice).optional(),
    /** Default budget of every run (a run's own budget takes precedence, limit by limit). */
    budget: Budget.optional(),
    /** Tools: permissions, approvals, execution, sandbox, fetch, search, MCP servers (validated by `ToolsConfig` in tools-config.ts). */
    tools: z.unknown().optional(),
    /** Agents beside the built-in ones (research, code, execute): declared here, or remote (A2A). */
    agents: z.array(AgentEntry).max(50).optional(),
    /** `troupe decide`'s defaults: its voters and the share a decision needs. */
    decide: z
      .object({
        voters: z.array(VoterConfig).min(1).max(15).optional(),
        threshold: z.number().gt(0, { error: "the threshold is more than 0 and at most 1" }).max(1, { error: "the threshold is more than 0 and at most 1" }).optional(),
      })
      .strict()
      .optional(),
    /** Memory: the conversation's history budget, and the long-term store (its limits, an embeddings model). */
    memory: MemoryConfig.optional(),
    /** How long finished runs are kept; `troupe serve` collects on its schedule (see core/retention.ts). */
    retention: RetentionConfig.optional(),
    /** Tasks run on cron schedules by `troupe serve` (kept in step with the store by name). */
    schedules: z.array(ScheduleInput).max(200).optional(),
    /** Tasks with `{{argument}}` placeholders, served as MCP prompts with completions for their arguments (see core/task-template.ts). */
    taskTemplates: TaskTemplates.optional(),
    /** Signed webhooks: the secret, a default, where deliveries may go, retries (see core/webhook.ts). */
    webhooks: WebhooksConfig.optional(),
    /** When the critic reviews a run's outcomes: auto (the default), always or never; a run's own `review` takes precedence. */
    review: ReviewMode.optional(),
    /** Untrusted workspace paths, and what a call steered by untrusted data does (docs/trust.md). */
    trust: TrustConfig.optional(),
    /** `troupe serve`: the host names it answers to, and what one API key may schedule. */
    server: ServerFileConfig.optional(),
  })
  .strict();
export type TroupeConfig = z.infer<typeof TroupeConfig>;

/** The file names looked for in the working directory, in order. */
export const CONFIG_FILES = ["troupe.config.json", "troupe.config.ts", "troupe.config.mts", "troupe.config.mjs", "troupe.config.js"] as const;

/** Gives a config file its type in TypeScript (`export default defineConfig({ … })`). */
export function defineConfig(config: z.input<typeof TroupeConfig>): z.input<typeof TroupeConfig> {
  return config;
}

async function readConfigSource(file: string): Promise<unknown> {
  if (file.endsWith(".json")) {
    const errors: ParseError[] = [];
    let text: string;
    try {
      text = readUserFileSync(file);
    } catch (error) {
      throw new ConfigError("invalid_config", `cannot read the config file: ${(error as Error).message}`, { path: file });
    }
    const value: unknown = parseJsonc(text, errors, { allowTrailingComma: false });
    const first = errors[0];
    if (first) {
      const before = text.slice(0, first.offset);
      const line = before.split("\n").length;
      const column = first.offset - before.lastIndexOf("\n");
      throw new ConfigError("invalid_config", `${file}:${line}:${column}: ${printParseErrorCode(first.error)}`, { path: file });
    }
    return value;
  }
  if (/\.m?ts$/.test(file) && !process.features.typescript) {
    throw new ConfigError("invalid_config", `${file}: this Node.js (${process.version}) cannot load TypeScript; use Node.js 22.18 or newer, or troupe.config.json`, { path: file });
  }
  let loaded: { default?: unknown };
  try {
    loaded = (await import(pathToFileURL(file).href)) as { default?: unknown };
  } catch (error) {
    throw new ConfigError("invalid_config", `${file}: cannot load it: ${errorMessage(error).split("\n")[0]}`, { path: file });
  }
  if (loaded.default === undefined) throw new ConfigError("invalid_config", `${file}: it has no default export`, { path: file });
  return loaded.default;
}

/** The config file to use: the one named (TROUPE_CONFIG), else the first of CONFIG_FILES in `directory`. */
export function findConfigFile(directory: string, named?: string): string | undefined {
  if (named !== undefined) {
    const file = path.resolve(directory, named);
    if (!existsSync(file)) throw new ConfigError("missing_config", `the config file ${file} does not exist (--config or TROUPE_CONFIG)`, { path: file });
    return file;
  }
  return CONFIG_FILES.map((name) => path.join(directory, name)).find((file) => existsSync(file));
}

/**
 * Reads and validates the config file, if there is one; an invalid file is a ConfigError naming
 * the file and the setting, so the CLI exits 2 before anything runs.
 */
export async function loadConfig(directory: string = process.cwd(), named?: string): Promise<{ config: TroupeConfig; file: string | undefined }> {
  const file = findConfigFile(directory, named);
  if (!file) return { config: {}, file: undefined };
  const parsed = TroupeConfig.safeParse(await readConfigSource(file));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new ConfigError("invalid_config", `${file}: ${where}${issue?.message ?? "invalid"}`, { path: file, setting: issue?.path.join(".") });
  }
  return { config: parsed.data, file };
}
