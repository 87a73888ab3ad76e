import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { Clock } from "../core/clock.js";
import type { Troupe } from "../runtime/engine.js";
import { createApp, type TroupeApp } from "./app.js";
import { Background } from "./background.js";
import type { ServerConfigInput } from "./config.js";
import type { Telemetry } from "./telemetry.js";

export interface StartServerOptions {
  troupe: Troupe;
  config?: ServerConfigInput;
  logger?: Logger;
  telemetry?: Telemetry;
  /** What schedules and retention tell time by (default the system's clock; a test moves one by hand). */
  clock?: Clock;
}

export interface RunningServer extends TroupeApp {
  url: string;
  background: Background;
  /**
   * The graceful stop: new API requests get 503, running tasks stop at their next checkpoint
   * (or after the grace period, where they are), everything is recorded, the listener closes.
   */
  shutdown(reason: string): Promise<void>;
}

/** Builds the app, takes up the tasks a previous server left, and listens. */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const troupeApp = await createApp(options);
  const { app, tasks, config, telemetry } = troupeApp;
  await app.listen({ host: config.host, port: config.port });
  // SQLite: what a previous server left; Postgres: this process's workers start taking runs from the shared queue.
  await tasks.start();
  await troupeApp.evals.recover();
  // Webhook deliveries, schedules and retention run beside the API.
  const background = new Background({ troupe: options.troupe, hub: troupeApp.hub, logger: app.log as Logger, tasks, serve: true, ...(options.clock ? { clock: options.clock } : {}) });
  await background.start();
  const address = app.server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let stopping: Promise<void> | undefined;
  const shutdown = (reason: string): Promise<void> => {
    stopping ??= (async () => {
      app.log.info({ reason, graceMs: config.shutdownGraceMs }, "shutting down: no new tasks, running tasks stop at their next checkpoint");
      // An eval's cases cannot be drained and taken up later (they belong to its workspaces): they are cancelled.
      await troupeApp.evals.shutdown();
      await tasks.shutdown(config.shutdownGraceMs);
      await troupeApp.mcp.closeAll();
      await background.stop();
      await app.close();
      // The store, and the MCP servers' connections (stdio servers are stopped).
      await options.troupe.shutdown();
      await telemetry.shutdown().catch(() => {});
      app.log.info("stopped");
    })();
    return stopping;
  };
  return { ...troupeApp, url: `http://${host}:${address.port}`, background, shutdown };
}
