import { readFileSync } from "node:fs";
import { z } from "zod";
import { ConfigError } from "../core/errors.js";
import { defineProvider } from "../providers/provider.js";
import { type ScriptStep, ScriptedChatModel } from "./scripted-chat-model.js";

const ScriptFile = z.union([z.array(z.record(z.string(), z.unknown())), z.object({ steps: z.array(z.record(z.string(), z.unknown())) })]);

/** Reads a script file: a list of steps, or `{ steps: [...] }`. */
export function readScript(file: string): ScriptStep[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new ConfigError("invalid_script", `cannot read the script ${file}: ${(error as Error).message}`, { path: file });
  }
  const script = ScriptFile.safeParse(parsed);
  if (!script.success) throw new ConfigError("invalid_script", `the script ${file} is not a list of steps`, { path: file });
  return (Array.isArray(script.data) ? script.data : script.data.steps) as ScriptStep[];
}

/**
 * The `scripted` provider replays the steps in TROUPE_SCRIPT (one model shared by every role), so
 * a whole CLI run can be driven deterministically; TROUPE_SCRIPT_LOG records each call.
 */
export const scriptedProvider = defineProvider({
  id: "scripted",
  description: "replays the model replies in the JSON file TROUPE_SCRIPT (testing and demos)",
  defaultModel: "script",
  // It streams text replies word by word, like the real providers, so the answer streams too.
  streams: true,
  requiredEnv: () => ["TROUPE_SCRIPT"],
  createModel: ({ env }) => new ScriptedChatModel({ steps: readScript(env.TROUPE_SCRIPT ?? ""), logFile: env.TROUPE_SCRIPT_LOG }),
});

/** The plugin export the CLI loads from TROUPE_PROVIDER_MODULES (`troupe/testing`, or this file). */
export const providers = [scriptedProvider];
