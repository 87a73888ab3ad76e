import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { type CatalogueCode, ERROR_CODES } from "../../core/error-codes.js";
import { errorMessage } from "../../core/errors.js";
import type { WorkerInfo } from "../../store/index.js";
import type { RouteContext } from "../route-context.js";
import { envelopeOf, ok } from "../envelope.js";
import { Health, type WorkerView } from "../schemas.js";

const PROBE_TIMEOUT_MS = 3_000;

/** Whether something answers within the probe's time, and how fast. */
async function probe<T>(ask: () => Promise<T>): Promise<{ ok: boolean; latency_ms: number; error?: string; value?: T }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const value = await Promise.race([
      ask(),
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
      }),
    ]);
    return { ok: true, latency_ms: Math.round((performance.now() - started) * 100) / 100, value };
  } catch (error) {
    return { ok: false, latency_ms: Math.round(performance.now() - started), error: errorMessage(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** A worker as /health and GET /workers show it. */
export function workerView(worker: WorkerInfo): z.infer<typeof WorkerView> {
  return {
    id: worker.id,
    host: worker.host,
    pid: worker.pid,
    concurrency: worker.concurrency,
    runs_held: worker.held,
    lease_takeovers: worker.takeovers,
    draining: worker.draining,
    alive: worker.alive,
    started_at: new Date(worker.startedAt).toISOString(),
    heartbeat_at: new Date(worker.heartbeatAt).toISOString(),
  };
}

/** The health of this process and what it depends on: the database, the shared queue (Postgres), the workers. */
export async function healthOf(context: Pick<RouteContext, "troupe" | "tasks">): Promise<z.infer<typeof Health>> {
  const { troupe, tasks } = context;
  const store = troupe.store;
  const database = probe(() => store.ping());
  const queue = store.queue ? probe(() => (store.queue as NonNullable<typeof store.queue>).depth()) : undefined;
  const workers = store.workers ? probe(() => (store.workers as NonNullable<typeof store.workers>).list()) : undefined;
  const [db, shared, registry] = await Promise.all([database, queue, workers]);
  const stats = tasks.stats();
  const code = !db.ok ? "database_unreachable" : shared && !shared.ok ? "queue_unreachable" : !tasks.accepting ? "shutting_down" : undefined;
  return {
    status: code ? "unavailable" : "ok",
    live: true,
    ready: code === undefined,
    ...(code ? { code } : {}),
    backend: store.kind,
    checks: {
      database: { ok: db.ok, latency_ms: db.latency_ms, ...(db.error ? { error: db.error } : {}) },
      ...(shared ? { queue: { ok: shared.ok, latency_ms: shared.latency_ms, ...(shared.value !== undefined ? { depth: shared.value } : {}), ...(shared.error ? { error: shared.error } : {}) } } : {}),
      accepting: tasks.accepting,
    },
    tasks: { running: stats.running, queued: shared?.value ?? stats.queued, max_running: tasks.maxRunning, workers: tasks.workers },
    ...(registry?.value ? { workers: registry.value.map(workerView) } : {}),
  };
}

/**
 * GET /health (liveness and readiness), without an API key, for probes; the same answer in the
 * API's envelope at GET /api/v1/health, for clients that only speak the API.
 */
export function registerHealthRoutes(app: FastifyInstance, context: RouteContext): void {
  const { docs } = context;
  docs.add({
    method: "get",
    path: "/health", operationId: "getHealth",
    summary: "Liveness and readiness (the database and, on Postgres, the run queue answer; the server accepts tasks), with the workers sharing the database",
    tags: ["system"],
    auth: false,
    responses: { 200: { description: "ready", schema: Health }, 503: { description: "alive but not ready", schema: Health } },
  });
  const health = () => healthOf(context);
  app.get("/health", async (_request, reply) => {
    const body = await health();
    return reply.code(body.ready ? 200 : 503).send(body);
  });
  docs.add({
    method: "get",
    path: "/api/v1/health", operationId: "getApiHealth", errors: ["not_ready"],
    summary: "GET /health in the API's envelope: code ok when ready, not_ready (503) otherwise",
    tags: ["system"],
    auth: false,
    responses: { 200: { description: "ready", schema: envelopeOf(Health) } },
  });
  app.get("/api/v1/health", async (_request, reply) => {
    const body = await health();
    if (body.ready) return reply.send(ok(body, "ready"));
    const why = !body.checks.database.ok
      ? `the database does not answer: ${body.checks.database.error ?? "unknown error"}`
      : body.checks.queue && !body.checks.queue.ok
        ? `the run queue does not answer: ${body.checks.queue.error ?? "unknown error"}`
        : "the server is shutting down";
    return reply.code(ERROR_CODES.not_ready.status).send({ code: "not_ready" satisfies CatalogueCode, message: `not ready: ${why}`, data: body });
  });
  app.get("/health/live", async () => ({ live: true }));
  app.get("/health/ready", async (_request, reply) => {
    const body = await health();
    return reply.code(body.ready ? 200 : 503).send(body);
  });
}

/**
 * The gauges read at scrape time: this process's tasks and, on Postgres, the shared queue's depth
 * and every worker's figures from the workers table (so one scrape of any process sees them all).
 */
export async function refreshMetrics(context: Pick<RouteContext, "troupe" | "tasks" | "metrics">): Promise<void> {
  const { metrics, troupe } = context;
  const stats = context.tasks.stats();
  metrics.tasksRunning.set(stats.running);
  metrics.tasksQueued.set(stats.queued);
  const { queue, workers } = troupe.store;
  if (queue) {
    const depth = await queue.depth().catch(() => undefined);
    if (depth !== undefined) metrics.queueDepth.set(depth);
  }
  if (workers) {
    const list = await workers.list().catch(() => undefined);
    if (list) {
      metrics.workerRunsHeld.reset();
      metrics.workerTakeovers.reset();
      for (const worker of list) {
        if (!worker.alive) continue;
        metrics.workerRunsHeld.set({ worker: worker.id }, worker.held);
        metrics.workerTakeovers.set({ worker: worker.id }, worker.takeovers);
      }
      metrics.workers.set({ state: "alive" }, list.filter((worker) => worker.alive).length);
      metrics.workers.set({ state: "silent" }, list.filter((worker) => !worker.alive).length);
    }
  }
  // Every verdict the store keeps (all processes', since the store began), by type: seed 001's reflection statistics.
  const reflections = await troupe.store.stats.reflections().catch(() => undefined);
  if (reflections) {
    for (const [type, counts] of Object.entries(reflections.byType)) {
      metrics.reflections.set({ type, outcome: "passed" }, counts.passed);
      metrics.reflections.set({ type, outcome: "failed" }, counts.failed);
      metrics.reflectionConfidence.set({ type }, counts.avgConfidence);
    }
  }
}

/** GET /metrics (Prometheus) and GET /openapi.json, behind the API key like the API. */
export function registerSystemRoutes(app: FastifyInstance, context: RouteContext): void {
  const { metrics, docs } = context;
  docs.add({
    method: "get",
    path: "/metrics", operationId: "getMetrics",
    summary: "Prometheus metrics: agent_* task, tool, model and reflection figures, HTTP requests, the process",
    tags: ["system"],
    responses: { 200: { description: "text exposition format", contentType: "text/plain" } },
  });
  app.get("/metrics", async (_request, reply) => {
    await refreshMetrics(context);
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  docs.add({
    method: "get",
    path: "/openapi.json", operationId: "getOpenApiDocument",
    summary: "This document",
    tags: ["system"],
    responses: { 200: { description: "OpenAPI 3.1" } },
  });
  app.get("/openapi.json", async () =>
    docs.document({
      title: "troupe",
      version: "0.1.0",
      description: "A multi-agent problem solver. Every answer under /api/v1 is an envelope { code, message, data }; code is \"ok\" or a stable error code.",
    }),
  );
}
