import type { Context } from "@opentelemetry/api";
import type { FastifyRequest } from "fastify";
import type { StoredEvalEvent } from "../eval/events.js";
import type { Troupe } from "../runtime/engine.js";
import type { ServerConfig } from "./config.js";
import type { EvalService } from "./eval-service.js";
import type { EventHub } from "./event-hub.js";
import type { ServerMetrics } from "./metrics.js";
import type { ApiDocs } from "./openapi.js";
import type { TaskService } from "./task-service.js";
import type { Origin } from "./task-service.js";

/** What every route file is given. */
export interface RouteContext {
  troupe: Troupe;
  tasks: TaskService;
  hub: EventHub;
  evals: EvalService;
  /** The evals' progress events, by eval id. */
  evalHub: EventHub<StoredEvalEvent>;
  docs: ApiDocs;
  metrics: ServerMetrics;
  config: ServerConfig;
}

const parents = new WeakMap<FastifyRequest, Context>();

/** Remembers the remote parent of a request's trace (its traceparent header). */
export function setTraceParent(request: FastifyRequest, parent: Context | undefined): void {
  if (parent) parents.set(request, parent);
}

/** Where a request comes from, for the logs and traces of what it causes. */
export function originOf(request: FastifyRequest): Origin {
  return { requestId: request.id, traceId: request.traceId, parent: parents.get(request) };
}
