import { z } from "zod";
import { ConfigError } from "../core/errors.js";

const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

/** The environment troupe reads, validated once (DESIGN.md, "Environment"). */
export const Env = z.object({
  TROUPE_PROVIDER: optionalText,
  TROUPE_MODEL: optionalText,
  TROUPE_DATA_DIR: optionalText.transform((value) => value ?? ".troupe"),
  TROUPE_WORKSPACE: optionalText.transform((value) => value ?? "workspace"),
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: optionalText,
  ANTHROPIC_API_KEY: optionalText,
  OLLAMA_HOST: optionalText,
  TROUPE_API_KEYS: optionalText,
  /** The script file of the `scripted` provider (testing). */
  TROUPE_SCRIPT: optionalText,
  /** Where the `scripted` provider appends one JSON line per model call (testing). */
  TROUPE_SCRIPT_LOG: optionalText,
});
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
