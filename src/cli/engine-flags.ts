import type { Command } from "commander";
import type { Env } from "../config/env.js";
import { InputError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { REVIEW_MODES, ReviewMode } from "../core/review-mode.js";
import type { RunResult } from "../core/run.js";
import type { InvokeOptions, LibraryRunRequest, Troupe } from "../runtime/engine.js";
import { exitCodeForResult } from "./exit-codes.js";
import { err, printJson } from "./io.js";
import { createProgress } from "./progress.js";
import { printResult } from "./render.js";

export interface EngineFlags {
  provider?: string;
  model?: string;
  workspace?: string;
  dataDir?: string;
  databaseUrl?: string;
  config?: string;
  review?: string;
}

/** The flags every command that opens an engine accepts. */
export function addEngineFlags(command: Command, withModel = true): Command {
  if (withModel) {
    command.option("--provider <provider>", "model provider, or provider:model (default: TROUPE_PROVIDER, else offline)");
    command.option("--model <model>", "model name for the provider (default: TROUPE_MODEL)");
  }
  return command
    .option("--workspace <dir>", "workspace the file tools are confined to (default: TROUPE_WORKSPACE or ./workspace)")
    .option("--data-dir <dir>", "where runs and checkpoints are kept (default: TROUPE_DATA_DIR or ./.troupe)")
    .option("--database-url <url>", "postgres://…: keep everything on Postgres instead of SQLite in the data directory (default: TROUPE_DATABASE_URL)")
    .option("--config <file>", "the config file (default: TROUPE_CONFIG, then ./troupe.config.json or .ts)");
}

/** `--review`, on the commands that start runs: the default review mode of the runs this process begins. */
export function addReviewFlag(command: Command): Command {
  return command.option("--review <mode>", "when the critic reviews a run's outcomes: auto (skipped when every outcome is a verified direct tool result), always (every round, and every answer by the synthesizer), or never (default: TROUPE_REVIEW, then the config's review, else auto)");
}

/** The `--review` flag's mode; a value that is not one is bad input. */
export function reviewFlag(value: string | undefined): ReviewMode | undefined {
  if (value === undefined) return undefined;
  const parsed = ReviewMode.safeParse(value);
  if (!parsed.success) throw new InputError("invalid_review", `--review must be one of ${REVIEW_MODES.join(", ")} (got "${value}")`);
  return parsed.data;
}

/** Where a read-only lookup reads: the flags first, then the environment. */
export async function lookupTarget(flags: { dataDir?: string; databaseUrl?: string }): Promise<{ dataDir: string; databaseUrl?: string }> {
  const { parseEnv } = await import("../config/env.js");
  const env = parseEnv();
  const databaseUrl = flags.databaseUrl ?? env.TROUPE_DATABASE_URL;
  return { dataDir: flags.dataDir ?? env.TROUPE_DATA_DIR, ...(databaseUrl ? { databaseUrl } : {}) };
}

/**
 * Opens an engine; heavy modules load only here, so `--help` stays fast. `env` replaces the
 * process's (a replay's placeholders). Everything is checked before anything is written: the
 * flags, the config file, the models, and `request` (a run's) against them — bad input exits 2
 * with one line and no data directory.
 */
export async function openEngine(flags: EngineFlags, env?: Env, request?: LibraryRunRequest): Promise<Troupe> {
  const review = reviewFlag(flags.review);
  const { Troupe } = await import("../runtime/engine.js");
  const { parseEnv } = await import("../config/env.js");
  const { loadProviderModules } = await import("./provider-plugins.js");
  // Providers troupe does not ship come from plugin modules (the scripted one of troupe/testing, for demos and process tests).
  const plugins = await loadProviderModules((env ?? parseEnv()).TROUPE_PROVIDER_MODULES);
  const prepared = await Troupe.prepare({
    provider: flags.provider,
    model: flags.model,
    workspace: flags.workspace,
    dataDir: flags.dataDir,
    providers: plugins,
    ...(review ? { review } : {}),
    ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}),
    ...(flags.config !== undefined ? { configFile: flags.config } : {}),
    ...(env ? { env } : {}),
  });
  if (request) prepared.check(request);
  const troupe = await prepared.open();
  // What the config asked for but will not get (an optional server that did not answer, trust.untrusted alone): said on every command.
  for (const warning of troupe.warnings) err(`warning: ${warning}`);
  if (troupe.providerSource === "default") {
    err("note: no model provider is configured, so troupe uses its offline rule-based model (set TROUPE_PROVIDER or --provider for a real one)");
  }
  return troupe;
}

/** Aborts on the first Ctrl-C (the run stops cleanly and can be resumed); a second one exits at once. */
export function abortOnInterrupt(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  let count = 0;
  const onSignal = (): void => {
    count += 1;
    if (count > 1) process.exit(130);
    err("cancelling… (press Ctrl-C again to exit at once)");
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}

/**
 * Drives a run or a resume to its end: progress on stderr (unless --json), the result on stdout,
 * Ctrl-C cancelling cleanly, the exit code from the result, and the engine closed.
 */
export async function driveAndReport(
  troupe: Troupe,
  json: boolean | undefined,
  invoke: (options: InvokeOptions) => Promise<RunResult>,
): Promise<void> {
  const interrupt = abortOnInterrupt();
  try {
    // Without --json, the synthesizer's answer streams to stdout as it is written, and is not printed twice.
    const progress = createProgress();
    const onEvent: ((event: StoredEvent) => void) | undefined = json ? undefined : progress.onEvent;
    const result = await invoke({ signal: interrupt.signal, onEvent });
    if (json) printJson(result);
    else printResult(result, progress.streamed());
    process.exitCode = exitCodeForResult(result);
    // Its webhook's deliveries go now, once; a failed one waits in the outbox for troupe serve to retry.
    await troupe.sendWebhooks(result.runId).catch(() => {});
  } finally {
    interrupt.dispose();
    // Everything written is flushed and every connection closed (Postgres's pool too) before the process ends.
    await troupe.shutdown();
  }
}
