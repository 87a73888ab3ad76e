import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Logger } from "pino";
import type { Troupe } from "../../runtime/engine.js";
import { LOCAL_PRINCIPAL } from "../config.js";
import { EventHub } from "../event-hub.js";
import { ServerMetrics } from "../metrics.js";
import { TaskService } from "../task-service.js";
import { NO_TELEMETRY } from "../telemetry.js";
import { createTroupeMcpServer } from "./mcp-server.js";

/** The largest message the stdio transport buffers; a client that sends more is disconnected. */
const MAX_STDIO_MESSAGE_BYTES = 4 * 1024 * 1024;

export interface StdioServeOptions {
  troupe: Troupe;
  /** Runs this process drives at once; the rest wait in its queue. */
  maxRunning: number;
  /** Logs go to stderr: stdout is the protocol's. */
  logger: Logger;
  /** How long running steps may take to reach a checkpoint once the client has gone. */
  graceMs: number;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

/**
 * `troupe mcp`: the MCP server over stdio, for a host that starts troupe as its subprocess
 * (Claude Desktop, Cursor, VS Code, Claude Code). It acts as the local person, with the same task
 * service as `troupe serve` (queue, durability, recovery). It first takes up what an earlier
 * process left; when the client goes away (stdin ends), running steps stop at their next
 * checkpoint and are recorded as suspended — the next `troupe mcp` or `troupe serve` continues
 * them, and get_run picks them up by id. Resolves once everything is recorded.
 */
export async function serveMcpOverStdio(options: StdioServeOptions): Promise<{ drained: number; stopped: number }> {
  const hub = new EventHub();
  const tasks = new TaskService({ troupe: options.troupe, maxRunning: options.maxRunning, metrics: new ServerMetrics(), telemetry: NO_TELEMETRY, hub, logger: options.logger });
  await tasks.start();
  const server = createTroupeMcpServer({ tasks, hub }, LOCAL_PRINCIPAL);
  const stdin = options.stdin ?? process.stdin;
  const transport = new StdioServerTransport(stdin as typeof process.stdin, (options.stdout ?? process.stdout) as typeof process.stdout, { maxBufferSize: MAX_STDIO_MESSAGE_BYTES });
  const gone = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    stdin.once("end", () => resolve());
    stdin.once("close", () => resolve());
  });
  transport.onerror = (error) => options.logger.warn({ err: error }, "MCP stdio message refused");
  await server.connect(transport);
  options.logger.info("MCP server on stdio");
  await gone;
  options.logger.info("MCP client gone: running steps stop at their next checkpoint");
  const drained = await tasks.shutdown(options.graceMs);
  await server.close().catch(() => undefined);
  return drained;
}
