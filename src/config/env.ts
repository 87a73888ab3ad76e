import { z } from "zod";
import { ReviewMode } from "../core/review-mode.js";
import { ConfigError } from "../core/errors.js";

const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

/** A whole number in an environment variable, within bounds. */
const optionalInteger = (min: number, max: number) =>
  optionalText.pipe(
    z
      .string()
      .regex(/^\d+$/, { error: "must be a whole number" })
      .transform(Number)
      .pipe(z.number().min(min, { error: `must be at least ${min}` }).max(max, { error: `must be at most ${max}` }))
      .optional(),
  );

/** A secret key's 32 bytes from its base64 or hex spelling, or undefined when it is neither. */
export function secretKeyBytes(value: string): Buffer | undefined {
  const text = value.trim();
  const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : /^[A-Za-z0-9+/_-]{43}=?$/.test(text) ? Buffer.from(text, "base64") : undefined;
  return bytes?.length === 32 ? bytes : undefined;
}

/** The environment troupe reads, validated once (docs/configuration.md, "Environment"). */
export const Env = z.object({
  TROUPE_PROVIDER: optionalText,
  TROUPE_MODEL: optionalText,
  TROUPE_DATA_DIR: optionalText.transform((value) => value ?? ".troupe"),
  TROUPE_WORKSPACE: optionalText.transform((value) => value ?? "workspace"),
  /** A config file to read instead of ./troupe.config.json or ./troupe.config.ts. */
  TROUPE_CONFIG: optionalText,
  /** `provider:model` (or a model of the main provider) for one role. */
  TROUPE_PLANNER_MODEL: optionalText,
  TROUPE_WORKER_MODEL: optionalText,
  TROUPE_CRITIC_MODEL: optionalText,
  TROUPE_SYNTHESIZER_MODEL: optionalText,
  /** Comma-separated `provider:model` ids tried in order when a role's model keeps failing. */
  TROUPE_FALLBACKS: optionalText,
  /** Per-call model timeout in milliseconds (default 60000). */
  TROUPE_TIMEOUT_MS: optionalInteger(1, 3_600_000),
  /** Retries of a failed model call (default 3). */
  TROUPE_MAX_RETRIES: optionalInteger(0, 10),
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: optionalText,
  ANTHROPIC_API_KEY: optionalText,
  ANTHROPIC_BASE_URL: optionalText,
  OLLAMA_HOST: optionalText,
  /** The base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio, DeepSeek, Kimi, GLM, Qwen). */
  OPENAI_COMPATIBLE_BASE_URL: optionalText,
  OPENAI_COMPATIBLE_API_KEY: optionalText,
  TROUPE_API_KEYS: optionalText,
  /** `provider:model` of an embeddings model for long-term memory (over the config file's memory.embeddings). */
  TROUPE_EMBEDDINGS: optionalText,
  /**
   * Comma-separated modules the CLI loads providers from (file paths, relative to the working
   * directory, or package names), each exporting `providers`: a list of `defineProvider` results.
   */
  TROUPE_PROVIDER_MODULES: optionalText,
  /** The script file of the `scripted` provider (testing). */
  TROUPE_SCRIPT: optionalText,
  /** Where the `scripted` provider appends one JSON line per model call (testing). */
  TROUPE_SCRIPT_LOG: optionalText,
  /** `postgres://…`: every table, the checkpoints and the run queue on Postgres (scale-out); SQLite in TROUPE_DATA_DIR when unset. */
  TROUPE_DATABASE_URL: optionalText.pipe(
    z
      .string()
      .refine((value) => /^postgres(ql)?:\/\/./.test(value), { error: "must be a Postgres URL (postgres://user:password@host:5432/database)" })
      .optional(),
  ),
  /** When the critic reviews a run's outcomes (auto, always, never), over the config file's `review`. */
  TROUPE_REVIEW: z.preprocess((value) => (value === "" ? undefined : value), ReviewMode.optional()),
  /** Postgres: seconds a worker may be silent before another takes its runs over (default 30). */
  TROUPE_LEASE_SECONDS: optionalInteger(15, 3_600),
  /**
   * The key that seals MCP servers' OAuth tokens in the store: 32 bytes as base64 or hex. When
   * unset, a key file `secret.key` (mode 0600) in the data directory is made on first use. Every
   * process sharing a Postgres store needs the same key, so set it there.
   */
  TROUPE_SECRET_KEY: optionalText.pipe(
    z
      .string()
      .refine((value) => secretKeyBytes(value) !== undefined, { error: "must be 32 bytes as base64 (44 characters) or hex (64 characters)" })
      .optional(),
  ),
})
  // Other variables are kept: a config file may name the one holding a key (`apiKeyEnv`).
  .loose();
export type Env = z.infer<typeof Env>;

/** Parses the environment; a malformed value is a ConfigError naming the variable. */
export function parseEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const parsed = Env.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? "environment");
    throw new ConfigError("invalid_env", `${name}: ${issue?.message ?? "invalid value"}`, { variable: name });
  }
  return parsed.data;
}
