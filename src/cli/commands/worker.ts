import type { Command } from "commander";
import { ConfigError, InputError } from "../../core/errors.js";
import { addEngineFlags, addReviewFlag, type EngineFlags, openEngine } from "../engine-flags.js";
import { err, parseNumberFlag } from "../io.js";

interface WorkerFlags extends EngineFlags {
  concurrency?: string;
  port?: string;
  host?: string;
  maxCrashes?: string;
}

/** A whole number flag within bounds, or a ConfigError naming it. */
function wholeNumber(name: string, value: string | undefined, min: number, max: number, fallback: number | undefined): number | undefined {
  if (value === undefined) return fallback;
  const number = parseNumberFlag(value);
  if (!Number.isInteger(number) || number < min || number > max) throw new InputError("invalid_flag", `--${name} must be a whole number from ${min} to ${max}`);
  return number;
}

export function registerWorker(program: Command): void {
  const command = program
    .command("worker")
    .description("take runs from the shared Postgres queue and drive them (scale-out: needs TROUPE_DATABASE_URL)")
    .option("--concurrency <n>", "runs driven at once (default 10, TROUPE_WORKER_CONCURRENCY)")
    .option("--port <port>", "serve /health and /metrics on this port (0: any free one); none by default")
    .option("--host <host>", "address /health and /metrics listen on (default 127.0.0.1)")
    .option("--max-crashes <n>", "fail a run whose workers died this many times in a row while it ran, instead of taking it over again (default 2, TROUPE_MAX_CRASHES)");
  addReviewFlag(addEngineFlags(command)).action(async (flags: WorkerFlags) => {
    const [{ parseEnv }, { startWorker }, { createLogger }, { createTelemetry }, { serverConfigFromEnv, parseServerConfig }] = await Promise.all([
      import("../../config/env.js"),
      import("../../server/worker.js"),
      import("../../server/app.js"),
      import("../../server/telemetry.js"),
      import("../../server/config.js"),
    ]);
    // Everything is checked before anything is opened.
    const env = parseEnv();
    if (!(flags.databaseUrl ?? env.TROUPE_DATABASE_URL)) {
      throw new ConfigError("database_url_required", "troupe worker needs TROUPE_DATABASE_URL (or --database-url postgres://…): workers share a Postgres database and its run queue");
    }
    const fromEnv = process.env.TROUPE_WORKER_CONCURRENCY?.trim();
    const concurrency = wholeNumber("concurrency", flags.concurrency ?? (fromEnv ? fromEnv : undefined), 1, 1_000, 10) as number;
    const port = wholeNumber("port", flags.port, 0, 65_535, undefined);
    const server = parseServerConfig({ ...serverConfigFromEnv(), ...(flags.maxCrashes !== undefined ? { maxCrashes: flags.maxCrashes as never } : {}) });
    const troupe = await openEngine(flags);
    const logger = createLogger(server.logLevel);
    let worker;
    try {
      worker = await startWorker({ troupe, concurrency, maxCrashes: server.maxCrashes, ...(server.maxRunningPerKey !== undefined ? { maxRunningPerKey: server.maxRunningPerKey } : {}), logger, telemetry: await createTelemetry(), ...(port !== undefined ? { port } : {}), ...(flags.host ? { host: flags.host } : {}), ...(server.allowedHosts !== undefined ? { allowedHosts: server.allowedHosts } : {}) });
    } catch (error) {
      await troupe.shutdown();
      throw error;
    }
    err(`troupe worker: ${worker.id} taking runs from ${troupe.store.location} (concurrency ${concurrency}${worker.url ? `, /health and /metrics at ${worker.url}` : ""}, model ${troupe.models.choice.worker.provider}:${troupe.models.choice.worker.model})`);
    const running = worker;
    await new Promise<void>((resolve) => {
      let signals = 0;
      const stop = (why: string): void => {
        signals += 1;
        if (signals > 1) process.exit(130);
        err(`troupe worker: ${why}: no new runs; the runs held stop at their next checkpoint and go back to the queue (up to ${Math.round(server.shutdownGraceMs / 1000)} s; again to exit at once)`);
        running.shutdown(why, server.shutdownGraceMs).then(resolve, (error: unknown) => {
          err(`troupe worker: shutdown failed: ${(error as Error).message}`);
          resolve();
        });
      };
      process.on("SIGTERM", () => stop("SIGTERM"));
      process.on("SIGINT", () => stop("SIGINT"));
      void running.drainRequested.then(() => stop("drain requested"));
    });
    err("troupe worker: stopped");
  });
}
