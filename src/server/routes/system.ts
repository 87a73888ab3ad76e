import type { FastifyInstance } from "fastify";
import { errorMessage } from "../../core/errors.js";
import type { RouteContext } from "../route-context.js";
import { envelopeOf, ErrorEnvelope, ok } from "../envelope.js";
import { Health } from "../schemas.js";

/** Whether the database answers, and how fast. */
function probeDatabase(context: RouteContext): { ok: boolean; latency_ms: number; error?: string } {
  const started = performance.now();
  try {
    context.troupe.store.db.prepare("SELECT 1").get();
    return { ok: true, latency_ms: Math.round((performance.now() - started) * 100) / 100 };
  } catch (error) {
    return { ok: false, latency_ms: Math.round(performance.now() - started), error: errorMessage(error) };
  }
}

/**
 * GET /health (liveness and readiness), without an API key, for probes; the same answer in the
 * API's envelope at GET /api/v1/health, for clients that only speak the API.
 */
export function registerHealthRoutes(app: FastifyInstance, context: RouteContext): void {
  const { tasks, docs } = context;
  docs.add({
    method: "get",
    path: "/health",
    summary: "Liveness and readiness (the database answers, the server accepts tasks)",
    tags: ["system"],
    auth: false,
    responses: { 200: { description: "ready", schema: Health }, 503: { description: "alive but not ready", schema: Health } },
  });
  const health = () => {
    const database = probeDatabase(context);
    const ready = database.ok && tasks.accepting;
    const stats = tasks.stats();
    return {
      status: ready ? ("ok" as const) : ("unavailable" as const),
      live: true,
      ready,
      checks: { database, accepting: tasks.accepting },
      tasks: { running: stats.running, queued: stats.queued, max_running: tasks.maxRunning },
    };
  };
  app.get("/health", async (_request, reply) => {
    const body = health();
    return reply.code(body.ready ? 200 : 503).send(body);
  });
  docs.add({
    method: "get",
    path: "/api/v1/health",
    summary: "GET /health in the API's envelope: code ok when ready, not_ready (503) otherwise",
    tags: ["system"],
    auth: false,
    responses: { 200: { description: "ready", schema: envelopeOf(Health) }, 503: { description: "alive but not ready", schema: ErrorEnvelope } },
  });
  app.get("/api/v1/health", async (_request, reply) => {
    const body = health();
    if (body.ready) return reply.send(ok(body, "ready"));
    const why = body.checks.database.ok ? "the server is shutting down" : `the database does not answer: ${body.checks.database.error ?? "unknown error"}`;
    return reply.code(503).send({ code: "not_ready", message: `not ready: ${why}`, data: body });
  });
  app.get("/health/live", async () => ({ live: true }));
  app.get("/health/ready", async (_request, reply) => {
    const body = health();
    return reply.code(body.ready ? 200 : 503).send(body);
  });
}

/** GET /metrics (Prometheus) and GET /openapi.json, behind the API key like the API. */
export function registerSystemRoutes(app: FastifyInstance, context: RouteContext): void {
  const { metrics, docs } = context;
  docs.add({
    method: "get",
    path: "/metrics",
    summary: "Prometheus metrics: agent_* task, tool, model and reflection figures, HTTP requests, the process",
    tags: ["system"],
    responses: { 200: { description: "text exposition format", contentType: "text/plain" } },
  });
  app.get("/metrics", async (_request, reply) => {
    const stats = context.tasks.stats();
    metrics.tasksRunning.set(stats.running);
    metrics.tasksQueued.set(stats.queued);
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  docs.add({
    method: "get",
    path: "/openapi.json",
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
