import type { Command } from "commander";
import { addEngineFlags, addReviewFlag, type EngineFlags, openEngine } from "../engine-flags.js";
import { err } from "../io.js";

interface ServeFlags extends EngineFlags {
  host?: string;
  port?: string;
  maxRunning?: string;
  maxRunningPerKey?: string;
  rateLimit?: string;
  maxCrashes?: string;
  requireAuth?: boolean;
  workers?: string;
  allowedHosts?: string;
}

export function registerServe(program: Command): void {
  const command = program
    .command("serve")
    .description("serve the HTTP API (/api/v1), the web console (/), MCP (/mcp, Streamable HTTP), an A2A agent (/.well-known/agent-card.json) and the Agent Protocol for LangGraph's clients (/langgraph)")
    .option("--host <host>", "address to listen on (default 127.0.0.1; any other needs TROUPE_API_KEYS)")
    .option("--port <port>", "port to listen on, 0 for any free one (default 8003)")
    .option("--max-running <n>", "tasks executed at once; the rest wait in the queue (default 100, TROUPE_MAX_RUNNING)")
    .option("--max-running-per-key <n>", "of those, at most this many one API key's; waiting tasks start round-robin across keys (default --max-running, TROUPE_MAX_RUNNING_PER_KEY)")
    .option("--rate-limit <n>", "requests per minute per API key, 0 for none (default 100, TROUPE_RATE_LIMIT)")
    .option("--max-crashes <n>", "fail a task whose process died this many times in a row while it ran, instead of taking it up again (default 2, TROUPE_MAX_CRASHES)")
    .option("--workers <n>", "runs this process drives at once; on Postgres (TROUPE_DATABASE_URL) 0 serves the API only and `troupe worker` processes run the tasks (default --max-running, TROUPE_WORKERS)")
    .option("--require-auth", "require API keys on loopback too (always required on other addresses)")
    .option(
      "--allowed-hosts <names>",
      "host names the server answers to besides its own addresses (localhost, 127.0.0.1, [::1]), comma-separated: name, .domain (and its subdomains) or *; a request naming another Host is refused (421), against DNS rebinding (TROUPE_ALLOWED_HOSTS, config server.allowedHosts)",
    );
  addReviewFlag(addEngineFlags(command)).action(async (flags: ServeFlags) => {
    const [{ parseServerConfig, serverConfigFromEnv, authPolicy }, { createTelemetry }, { startServer }, { createLogger }, { parseEnv }, { ConfigError }, { parseAllowedHosts }] = await Promise.all([
      import("../../server/config.js"),
      import("../../server/telemetry.js"),
      import("../../server/serve.js"),
      import("../../server/app.js"),
      import("../../config/env.js"),
      import("../../core/errors.js"),
      import("../../core/host-names.js"),
    ]);
    // Everything is checked before anything is opened: a bad flag or missing key writes nothing.
    const config = parseServerConfig({
      ...serverConfigFromEnv(),
      ...(flags.host !== undefined ? { host: flags.host } : {}),
      ...(flags.port !== undefined ? { port: flags.port as never } : {}),
      ...(flags.maxRunning !== undefined ? { maxRunning: flags.maxRunning as never } : {}),
      ...(flags.maxRunningPerKey !== undefined ? { maxRunningPerKey: flags.maxRunningPerKey as never } : {}),
      ...(flags.rateLimit !== undefined ? { rateLimitPerMinute: flags.rateLimit as never } : {}),
      ...(flags.maxCrashes !== undefined ? { maxCrashes: flags.maxCrashes as never } : {}),
      ...(flags.workers !== undefined ? { workers: flags.workers as never } : {}),
      ...(flags.requireAuth ? { requireAuth: true } : {}),
      ...(flags.allowedHosts !== undefined ? { allowedHosts: flags.allowedHosts } : {}),
    });
    authPolicy(config);
    if (config.allowedHosts !== undefined) parseAllowedHosts(config.allowedHosts.split(","), "--allowed-hosts (TROUPE_ALLOWED_HOSTS)");
    const postgres = Boolean(flags.databaseUrl ?? parseEnv().TROUPE_DATABASE_URL);
    if (!postgres && config.workers !== undefined) {
      // SQLite: the server is the only process, so it drives every task; --workers is its run limit.
      if (config.workers === 0) {
        throw new ConfigError("workers_need_postgres", "--workers 0 (an API process that runs no tasks) needs TROUPE_DATABASE_URL: with SQLite the server is the only process and runs its tasks");
      }
      config.maxRunning = config.workers;
    }
    const troupe = await openEngine(flags);
    const telemetry = await createTelemetry();
    let server;
    try {
      server = await startServer({ troupe, config, telemetry, logger: createLogger(config.logLevel) });
    } catch (error) {
      await troupe.shutdown();
      throw error;
    }
    const role = troupe.store.kind === "postgres" ? `, ${troupe.store.location}, ${server.tasks.workers === 0 ? "API only" : `worker ${server.tasks.dispatcher?.id ?? ""} driving up to ${server.tasks.workers} runs`}` : "";
    err(`troupe serve: listening on ${server.url} (console at ${server.url}/, API at ${server.url}/api/v1, MCP at ${server.url}/mcp, A2A card at ${server.url}/.well-known/agent-card.json, LangGraph's clients at ${server.url}/langgraph, model ${troupe.models.choice.worker.provider}:${troupe.models.choice.worker.model}${role})`);
    const running = server;
    await new Promise<void>((resolve) => {
      let signals = 0;
      const onSignal = (signal: NodeJS.Signals): void => {
        signals += 1;
        if (signals > 1) process.exit(130);
        err(`troupe serve: ${signal}: finishing running steps (up to ${Math.round(config.shutdownGraceMs / 1000)} s; again to exit at once)`);
        running.shutdown(signal).then(resolve, (error: unknown) => {
          err(`troupe serve: shutdown failed: ${(error as Error).message}`);
          resolve();
        });
      };
      process.on("SIGTERM", onSignal);
      process.on("SIGINT", onSignal);
    });
    err("troupe serve: stopped");
  });
}
