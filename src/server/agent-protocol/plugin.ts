import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import { createAuthHook } from "../auth.js";
import type { AuthPolicy } from "../config.js";
import type { EventHub } from "../event-hub.js";
import type { HostPolicy } from "../host-policy.js";
import type { ApiDocs } from "../openapi.js";
import type { TaskService } from "../task-service.js";
import { installProtocolErrors, sendProtocolError } from "./errors.js";
import { AGENT_PROTOCOL_PREFIX } from "./route-docs.js";
import { registerAssistantRoutes } from "./routes-assistants.js";
import { registerRunRoutes } from "./routes-runs.js";
import { registerStoreRoutes } from "./routes-store.js";
import { registerThreadRoutes } from "./routes-threads.js";
import { AgentRuns } from "./runs.js";
import { AgentStore } from "./store-items.js";
import { AgentThreads } from "./threads.js";

export interface AgentProtocolOptions {
  tasks: TaskService;
  hub: EventHub;
  docs: ApiDocs;
  hosts: HostPolicy;
  auth: AuthPolicy;
  /** The rate limit and overload protection every protocol scope has; errors sent the protocol's way. */
  protect: (scope: FastifyInstance, send: typeof sendProtocolError) => Promise<void>;
}

/** Response headers a page's script may read: where a run is (the SDK reads both) and the request's id. */
const EXPOSED = ["content-location", "location", "x-pagination-next", "x-request-id"];

/**
 * The Agent Protocol (threads, runs, store, streaming) as `@langchain/langgraph-sdk` speaks it, for
 * its `Client`, React's `useStream` and the apps on them (Agent Chat UI, LangGraph Studio), under
 * `/langgraph`: their paths (/threads, /runs, /store, /assistants, /info) would otherwise meet the
 * console's and the REST API's, and a client's `apiUrl` carries the prefix. It sits on the task
 * service like MCP and A2A — the same queue, checkpoints, keys, ownership and per-key fairness.
 * Keys come as `X-Api-Key` (what the SDK sends) or as a bearer token. Pages of the origins troupe
 * lets change things (host-policy.ts: its own, and those --allowed-hosts names) may call it
 * from the browser: CORS is answered for them, and only them.
 */
export async function registerAgentProtocol(app: FastifyInstance, options: AgentProtocolOptions): Promise<void> {
  await app.register(
    async (scope) => {
      installProtocolErrors(scope);
      await scope.register(cors, {
        delegator: (request, callback) => {
          const origin = request.headers.origin;
          const allowed = origin !== undefined && options.hosts.originAllowed(origin, request.headers.host);
          callback(null, { origin: allowed ? origin : false, methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"], exposedHeaders: EXPOSED, maxAge: 600, strictPreflight: false });
        },
      });
      // Chrome's Private Network Access: a public page calling troupe on a private address asks first.
      scope.addHook("onSend", async (request, reply) => {
        const origin = request.headers.origin;
        if (request.method === "OPTIONS" && request.headers["access-control-request-private-network"] === "true" && origin !== undefined && options.hosts.originAllowed(origin, request.headers.host)) {
          reply.header("access-control-allow-private-network", "true");
        }
      });
      scope.addHook("onRequest", createAuthHook(options.auth, { apiKeyHeader: true }));
      await options.protect(scope, sendProtocolError);
      const feed = { tasks: options.tasks, hub: options.hub };
      const threads = new AgentThreads(options.tasks);
      const runs = new AgentRuns(feed, threads);
      registerAssistantRoutes(scope, { troupe: options.tasks.troupe, docs: options.docs });
      registerThreadRoutes(scope, { threads, docs: options.docs });
      registerRunRoutes(scope, { feed, threads, runs, docs: options.docs });
      registerStoreRoutes(scope, { store: new AgentStore(options.tasks.troupe.store.memoryStore), docs: options.docs });
    },
    { prefix: AGENT_PROTOCOL_PREFIX },
  );
}
