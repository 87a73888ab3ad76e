import type { AddressInfo } from "node:net";
import type { StoredEvalEvent } from "../eval/events.js";
import Fastify, { type FastifyBaseLogger, LogController } from "fastify";
import type { Logger } from "pino";
import { ConfigError, InputError } from "../core/errors.js";
import type { Troupe } from "../runtime/engine.js";
import { EvalService } from "./eval-service.js";
import { Background } from "./background.js";
import { EventHub } from "./event-hub.js";
import { installErrorHandler } from "./error-handler.js";
import { hostPolicyOf } from "./host-policy.js";
import { ServerMetrics } from "./metrics.js";
import { healthOf, refreshMetrics } from "./routes/system.js";
import { TaskService } from "./task-service.js";
import { NO_TELEMETRY, type Telemetry } from "./telemetry.js";

export interface StartWorkerOptions {
  troupe: Troupe;
  /** Runs this worker drives at once. */
  concurrency: number;
  /** A run whose worker died this many times in a row while it ran is failed instead of taken over again (default 2). */
  maxCrashes?: number;
  /** Runs of one API key this worker drives at once, at most (default: all of `concurrency`). */
  maxRunningPerKey?: number;
  /** Serve /health and /metrics on this port (0: any free one); none when absent. */
  port?: number;
  host?: string;
  /** Raw TROUPE_ALLOWED_HOSTS: names /health and /metrics answer to besides the worker's own addresses (default: the config file's `server.allowedHosts`). */
  allowedHosts?: string;
  logger: Logger;
  telemetry?: Telemetry;
}

export interface RunningWorker {
  id: string;
  tasks: TaskService;
  metrics: ServerMetrics;
  /** Where /health and /metrics answer, when a port was given. */
  url: string | undefined;
  /** Resolves when the control channel asks this worker to drain (its process should then shut down). */
  drainRequested: Promise<void>;
  /** The graceful stop: no more runs taken, the runs held stop at their next checkpoint and go back to the queue. */
  shutdown(reason: string, graceMs: number): Promise<void>;
}

/**
 * `troupe worker`: a process that takes runs from the shared Postgres queue and drives them — no
 * API, only /health and /metrics when a port is given. It also runs evals accepted by API
 * processes.
 */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const { troupe, logger } = options;
  if (!troupe.store.queue) throw new ConfigError("database_url_required", "troupe worker needs TROUPE_DATABASE_URL (or --database-url): workers share a Postgres database and its run queue");
  const telemetry = options.telemetry ?? NO_TELEMETRY;
  const metrics = new ServerMetrics();
  const hub = new EventHub();
  const tasks = new TaskService({ troupe, maxRunning: options.concurrency, workers: options.concurrency, maxCrashes: options.maxCrashes ?? 2, ...(options.maxRunningPerKey !== undefined ? { maxRunningPerKey: options.maxRunningPerKey } : {}), metrics, telemetry, hub, logger });
  const dispatcher = tasks.dispatcher;
  if (!dispatcher) throw new InputError("invalid_concurrency", "--concurrency must be at least 1");
  const evals = new EvalService({ troupe, hub: new EventHub<StoredEvalEvent>((event) => event.evalId), logger, runs: true });
  let url: string | undefined;
  const app = Fastify({ loggerInstance: logger.child({ component: "worker-http" }) as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }), forceCloseConnections: true });
  if (options.port !== undefined) {
    // The API's host policy (host-policy.ts): a page of another site may not read these through DNS rebinding.
    const hosts = hostPolicyOf({ host: options.host ?? "127.0.0.1", allowedHosts: options.allowedHosts, publicUrl: undefined }, troupe.config.server);
    installErrorHandler(app);
    app.addHook("onRequest", async (request) => {
      hosts.check({ method: request.method, headers: request.raw.headers });
    });
    app.get("/health", async (_request, reply) => {
      const body = await healthOf({ troupe, tasks });
      return reply.code(body.ready ? 200 : 503).send({ ...body, worker: dispatcher.info() });
    });
    app.get("/metrics", async (_request, reply) => {
      await refreshMetrics({ troupe, tasks, metrics });
      metrics.workerRunsHeld.set({ worker: dispatcher.id }, dispatcher.held);
      return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    });
    await app.listen({ host: options.host ?? "127.0.0.1", port: options.port });
    const address = app.server.address() as AddressInfo;
    url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
  }
  let requested: () => void = () => {};
  const drainRequested = new Promise<void>((resolve) => (requested = resolve));
  dispatcher.onDrainRequested = () => requested();
  await tasks.start();
  await evals.recover();
  // A worker sends webhook deliveries too (pg-boss jobs); schedules and retention are the API processes'.
  const background = new Background({ troupe, hub, logger, serve: false });
  await background.start();
  let stopping: Promise<void> | undefined;
  return {
    id: dispatcher.id,
    tasks,
    metrics,
    url,
    drainRequested,
    shutdown: (reason, graceMs) => {
      stopping ??= (async () => {
        logger.info({ reason, graceMs, worker: dispatcher.id }, "worker stopping: no new runs; runs held stop at their next checkpoint and go back to the queue");
        await evals.shutdown();
        await tasks.shutdown(graceMs);
        await background.stop();
        await app.close();
        await troupe.shutdown();
        await telemetry.shutdown().catch(() => {});
      })();
      return stopping;
    },
  };
}
