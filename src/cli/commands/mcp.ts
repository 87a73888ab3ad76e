import type { Command } from "commander";
import { addEngineFlags, addReviewFlag, type EngineFlags, openEngine } from "../engine-flags.js";
import { err } from "../io.js";
import { registerMcpAuth } from "./mcp-auth.js";

interface McpFlags extends EngineFlags {
  maxRunning?: string;
}

/** `troupe mcp`: troupe as an MCP server on stdio, for an MCP host that starts it. */
export function registerMcp(program: Command): void {
  const command = program
    .command("mcp")
    .description("serve troupe as an MCP server on stdio (tools run_task, get_run, list_runs, resume_run, decide, memory_search, memory_save; resources troupe://runs/{id})")
    .option("--max-running <n>", "runs driven at once; the rest wait in the queue (default 100, TROUPE_MAX_RUNNING)");
  addReviewFlag(addEngineFlags(command)).action(async (flags: McpFlags) => {
    const [{ parseServerConfig, serverConfigFromEnv }, { createLogger }, { serveMcpOverStdio }] = await Promise.all([
      import("../../server/config.js"),
      import("../../server/app.js"),
      import("../../server/mcp/mcp-stdio.js"),
    ]);
    const config = parseServerConfig({ ...serverConfigFromEnv(), ...(flags.maxRunning !== undefined ? { maxRunning: flags.maxRunning as never } : {}) });
    // stdout is the protocol: logs (warnings and worse by default) go to stderr.
    const logger = createLogger(process.env.TROUPE_LOG_LEVEL ? config.logLevel : "warn", process.stderr);
    const troupe = await openEngine(flags);
    // A host that closes stdin sends SIGTERM two seconds later and SIGKILL two after that: the
    // drain gets 1.5 s, and the signals must not end the process before the runs are recorded.
    const ignore = (): void => {};
    process.on("SIGTERM", ignore);
    process.on("SIGINT", ignore);
    try {
      const { drained, stopped } = await serveMcpOverStdio({ troupe, maxRunning: config.maxRunning, logger, graceMs: Math.min(config.shutdownGraceMs, 1_500) });
      if (drained + stopped > 0) err(`troupe mcp: ${drained + stopped} run(s) suspended at their last checkpoint; the next troupe mcp or troupe serve continues them`);
    } finally {
      await troupe.shutdown();
      process.off("SIGTERM", ignore);
      process.off("SIGINT", ignore);
    }
  });
  registerMcpAuth(command);
}
