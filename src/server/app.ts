import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import rateLimit from "@fastify/rate-limit";
import underPressure from "@fastify/under-pressure";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, LogController, type RouteOptions } from "fastify";
import { pino, type Logger } from "pino";
import { TroupeError } from "../core/errors.js";
import type { StoredEvalEvent } from "../eval/events.js";
import type { Troupe } from "../runtime/engine.js";
import { A2AService } from "./a2a/a2a-routes.js";
import { registerAgentProtocol } from "./agent-protocol/plugin.js";
import { AGENT_PROTOCOL_PREFIX } from "./agent-protocol/route-docs.js";
import { createAuthHook } from "./auth.js";
import { authPolicy, parseServerConfig, type ServerConfig, type ServerConfigInput } from "./config.js";
import { installErrorHandler, sendError } from "./error-handler.js";
import { hostPolicyOf } from "./host-policy.js";
import { EvalService } from "./eval-service.js";
import { EventHub } from "./event-hub.js";
import { McpSessions } from "./mcp/mcp-http.js";
import { ServerMetrics } from "./metrics.js";
import { ApiDocs } from "./openapi.js";
import { documentProtocols } from "./protocol-docs.js";
import { type RouteContext, setTraceParent } from "./route-context.js";
import { registerConsoleRoutes } from "./routes/console.js";
import { registerDecideRoutes } from "./routes/decide.js";
import { registerEvalRoutes } from "./routes/evals.js";
import { registerEventRoutes } from "./routes/events.js";
import { registerGraphRoutes } from "./routes/graph.js";
import { registerMemoryRoutes } from "./routes/memory.js";
import { registerPlanRoutes } from "./routes/plan.js";
import { registerHealthRoutes, registerSystemRoutes } from "./routes/system.js";
import { registerTaskRoutes } from "./routes/tasks.js";
import { registerToolRoutes } from "./routes/tools.js";
import { registerWorkerRoutes } from "./routes/workers.js";
import { registerForkRoutes } from "./routes/forks.js";
import { registerGrantRoutes } from "./routes/grants.js";
import { registerScheduleRoutes } from "./routes/schedules.js";
import { TaskService } from "./task-service.js";
import { NO_TELEMETRY, type Telemetry, traceOfRequest } from "./telemetry.js";

export interface CreateAppOptions {
  troupe: Troupe;
  config?: ServerConfigInput;
  /** Where logs go (JSON lines); a pino logger at the configured level on stdout by default. */
  logger?: Logger;
  telemetry?: Telemetry;
  /** How often the event-loop delay is sampled (ms); tests shorten it. */
  pressureSampleIntervalMs?: number;
  /** Told of every route as it is registered (the docs check lists them: scripts/check-docs.mjs). */
  onRoute?: (route: RouteOptions) => void;
}

export interface TroupeApp {
  app: FastifyInstance;
  tasks: TaskService;
  evals: EvalService;
  metrics: ServerMetrics;
  hub: EventHub;
  evalHub: EventHub<StoredEvalEvent>;
  config: ServerConfig;
  telemetry: Telemetry;
  /** MCP sessions over Streamable HTTP (/mcp). */
  mcp: McpSessions;
  /** The A2A agent (its card and transports). */
  a2a: A2AService;
}

/** The JSON logger: ISO times, the Authorization header never written. */
export function createLogger(level: ServerConfig["logLevel"], destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: "troupe" },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ["req.headers.authorization", "headers.authorization", 'req.headers["x-api-key"]', 'headers["x-api-key"]'], censor: "[redacted]" },
  };
  return destination ? pino(options, destination) : pino(options);
}

const TRACE = Symbol("troupe.trace");
type TracedMessage = IncomingMessage & { [TRACE]?: ReturnType<typeof traceOfRequest> };

/** A request id from the client's X-Request-Id when it is sane, otherwise a new one. */
function requestIdOf(raw: IncomingMessage): string {
  const header = raw.headers["x-request-id"];
  const value = Array.isArray(header) ? header[0] : header;
  return value && /^[\w.:-]{1,128}$/.test(value) ? value : randomUUID();
}

/**
 * The HTTP service: /api/v1 (tasks, plan, tools) behind API keys, rate limit and overload
 * protection; /health open; /metrics and /openapi.json behind the keys; the console at /.
 */
export async function createApp(options: CreateAppOptions): Promise<TroupeApp> {
  const config = parseServerConfig(options.config ?? {});
  const policy = authPolicy(config);
  const hosts = hostPolicyOf(config, options.troupe.config.server);
  const logger = options.logger ?? createLogger(config.logLevel);
  const telemetry = options.telemetry ?? NO_TELEMETRY;
  const metrics = new ServerMetrics();
  const hub = new EventHub();
  const docs = new ApiDocs();
  documentProtocols(docs);
  const tasks = new TaskService({
    troupe: options.troupe,
    maxRunning: config.maxRunning,
    ...(config.maxRunningPerKey !== undefined ? { maxRunningPerKey: config.maxRunningPerKey } : {}),
    ...(config.workers !== undefined ? { workers: config.workers } : {}),
    maxCrashes: config.maxCrashes,
    metrics,
    telemetry,
    hub,
    logger,
  });
  const evalHub = new EventHub<StoredEvalEvent>((event) => event.evalId);
  // An API process that only serves (Postgres, --workers 0) stores evals; a process with workers runs them.
  const evals = new EvalService({ troupe: options.troupe, hub: evalHub, logger, runs: tasks.workers > 0 });
  const context: RouteContext = { troupe: options.troupe, tasks, hub, evals, evalHub, docs, metrics, config };
  // The protocols real clients speak: MCP (Streamable HTTP at /mcp) and A2A, over the same tasks.
  const mcp = new McpSessions({ tasks, hub }, logger);
  const a2a = new A2AService({ feed: { tasks, hub }, log: logger, keysRequired: policy.required, ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}) });

  const app: FastifyInstance = Fastify({
    // pino's Logger is Fastify's logger; the cast only widens its type to Fastify's interface.
    loggerInstance: logger as FastifyBaseLogger,
    // One log line per request comes from the onResponse hook below, with the route and timing.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "requestId" }),
    bodyLimit: config.bodyLimitBytes,
    requestIdHeader: false,
    genReqId: requestIdOf,
    return503OnClosing: true,
    forceCloseConnections: true,
    childLoggerFactory: (log, bindings, childOptions, raw) => {
      const traced = raw as TracedMessage;
      traced[TRACE] ??= traceOfRequest(raw.headers.traceparent);
      return log.child({ ...bindings, traceId: traced[TRACE].traceId }, childOptions);
    },
  });
  // Bodies are JSON only (Fastify also parses text/plain by default): anything else is 415.
  app.removeContentTypeParser("text/plain");
  if (options.onRoute) app.addHook("onRoute", options.onRoute);
  app.decorateRequest("principal", null as never);
  app.decorateRequest("traceId", "");
  installErrorHandler(app);

  // First of all, on every route (the console's files, /health, /mcp, A2A, 404s too): a request
  // must name this server, and a change must not come from another site's page (host-policy.ts).
  app.addHook("onRequest", async (request) => {
    hosts.check({ method: request.method, headers: request.raw.headers }, request.routeOptions.url === "/mcp");
  });
  app.addHook("onRequest", async (request) => {
    const traced = request.raw as TracedMessage;
    traced[TRACE] ??= traceOfRequest(request.headers.traceparent);
    request.traceId = traced[TRACE].traceId;
    setTraceParent(request, traced[TRACE].parent);
    if (!tasks.accepting && (request.url.startsWith("/api/") || request.url.startsWith(`${AGENT_PROTOCOL_PREFIX}/`)) && !request.url.startsWith("/api/v1/health")) {
      throw new TroupeError("shutting_down", "the server is shutting down; retry shortly", { retryAfterSeconds: config.retryAfterSeconds });
    }
  });
  app.addHook("onSend", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });
  app.addHook("onResponse", async (request, reply) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? "unmatched", status_code: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    request.log.info({ method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 }, "request completed");
  });

  /** Overload protection and the per-key rate limit, for the API and the protocol endpoints alike (`send` answers in the scope's error shape). */
  const protect = async (scope: FastifyInstance, send: (reply: FastifyReply, error: TroupeError) => FastifyReply = sendError): Promise<void> => {
    if (config.maxEventLoopDelayMs > 0) {
      await scope.register(underPressure, {
        maxEventLoopDelay: config.maxEventLoopDelayMs,
        sampleInterval: options.pressureSampleIntervalMs,
        pressureHandler: (_request, reply, type, value) => {
          metrics.httpRequests.inc({ method: _request.method, route: "overloaded", status_code: "503" });
          send(
            reply,
            new TroupeError("overloaded", `the server is overloaded (${type} ${Math.round(value ?? 0)}); retry shortly`, { retryAfterSeconds: config.retryAfterSeconds }),
          );
        },
      });
    }
    if (config.rateLimitPerMinute > 0) {
      await scope.register(rateLimit, {
        max: config.rateLimitPerMinute,
        timeWindow: 60_000,
        keyGenerator: (request) => request.principal.id,
        errorResponseBuilder: (_request, limit) =>
          new TroupeError("rate_limited", `more than ${limit.max} requests a minute; retry in ${limit.after}`, {
            limit: limit.max,
            retryAfterSeconds: Math.ceil(limit.ttl / 1000),
          }),
      });
    }
  };

  registerHealthRoutes(app, context);
  await a2a.registerCard(app);
  await registerConsoleRoutes(app);
  await app.register(async (secured) => {
    secured.addHook("onRequest", createAuthHook(policy));
    registerSystemRoutes(secured, context);
    await secured.register(async (protocols) => {
      await protect(protocols);
      await protocols.register(async (scope) => mcp.register(scope));
      await protocols.register(async (scope) => a2a.register(scope));
    });
    await secured.register(
      async (api) => {
        await protect(api);
        registerTaskRoutes(api, context);
        registerPlanRoutes(api, context);
        registerEventRoutes(api, context);
        registerGraphRoutes(api, context);
        registerToolRoutes(api, context);
        registerEvalRoutes(api, context);
        registerDecideRoutes(api, context);
        registerMemoryRoutes(api, context);
        registerWorkerRoutes(api, context);
        registerForkRoutes(api, context);
        registerScheduleRoutes(api, context);
        registerGrantRoutes(api, context);
      },
      { prefix: "/api/v1" },
    );
  });
  // The Agent Protocol (LangGraph's SDK clients) under /langgraph, with its own key header, CORS and error shape.
  await registerAgentProtocol(app, { tasks, hub, docs, hosts, auth: policy, protect });
  logger.info({ allowedHosts: hosts.describe() }, "host names answered to");
  return { app, tasks, evals, metrics, hub, evalHub, config, telemetry, mcp, a2a };
}
