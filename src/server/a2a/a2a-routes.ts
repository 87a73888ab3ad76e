import { AsyncLocalStorage } from "node:async_hooks";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AgentCard } from "@a2a-js/sdk";
import type { User } from "@a2a-js/sdk/server";
import { legacyAgentCardRouter } from "@a2a-js/sdk/compat/v0_3/server/express";
import { jsonRpcHandler, restHandler } from "@a2a-js/sdk/server/express";
import express, { type NextFunction, type Request, type Response } from "express";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { Principal } from "../config.js";
import type { RunFeed } from "../run-follow.js";
import { A2A_PATHS, agentCardFor } from "./agent-card.js";
import { RunBusManager } from "./bus-manager.js";
import { jsonRpcEnvelope } from "./jsonrpc-envelope.js";
import { TroupeRequestHandler } from "./request-handler.js";
import { RunTaskStore } from "./run-task-store.js";
import { TroupeAgentExecutor } from "./troupe-executor.js";

const PRINCIPAL = Symbol("troupe.principal");
type WithPrincipal = IncomingMessage & { [PRINCIPAL]?: Principal };

/** The principal behind an A2A call, as the SDK's `User`. */
class PrincipalUser implements User {
  readonly #name: string;
  constructor(name: string) {
    this.#name = name;
  }
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.#name;
  }
}

export interface A2AOptions {
  feed: RunFeed;
  log: Logger;
  /** Whether the server asks for API keys (the card then says so). */
  keysRequired: boolean;
  /** The base URL the card names (behind a proxy); otherwise the one the client reached. */
  publicUrl?: string;
}

/**
 * troupe as an A2A agent, through `@a2a-js/sdk`: its request handler over troupe's runs, and its
 * Express transport handlers — JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest, both with the
 * SDK's v0.3 compatibility layer — mounted in Fastify behind the same API-key hook as the REST
 * API (the key's principal owns the tasks), and the agent card at /.well-known/agent-card.json
 * (open, as discovery is; v1.0 or, by the A2A-Version header, v0.3).
 */
export class A2AService {
  readonly buses: RunBusManager;
  readonly handler: TroupeRequestHandler;
  readonly #options: A2AOptions;
  readonly #base = new AsyncLocalStorage<string>();
  readonly #express: express.Express;

  constructor(options: A2AOptions) {
    this.#options = options;
    const store = new RunTaskStore(options.feed.tasks);
    const executor = new TroupeAgentExecutor(options.feed, store, options.log);
    this.buses = new RunBusManager((runId, bus) => executor.bridge(runId, bus));
    executor.attach(this.buses);
    this.handler = new TroupeRequestHandler(this.#card("http://127.0.0.1"), options.feed, store, executor, this.buses);
    this.#express = this.#expressApp();
  }

  #card(base: string) {
    return agentCardFor(this.#options.feed.tasks.troupe.agents, this.#options.publicUrl ?? base, this.#options.keysRequired);
  }

  #expressApp(): express.Express {
    const app = express();
    app.disable("x-powered-by");
    const userBuilder = async (request: Request): Promise<User> => {
      const principal = (request as unknown as WithPrincipal)[PRINCIPAL];
      if (!principal) throw new Error("an A2A request reached the SDK without a principal");
      return new PrincipalUser(principal.id);
    };
    const current = async () => this.#card(this.#base.getStore() ?? "http://127.0.0.1");
    app.use(A2A_PATHS.card, legacyAgentCardRouter({ agentCardProvider: current, cache: { maxAge: 60 } }));
    app.get(A2A_PATHS.card, async (_request, response) => {
      response.setHeader("cache-control", "public, max-age=60");
      response.append("vary", "A2A-Version");
      response.json(AgentCard.toJSON(await current()));
    });
    app.use(A2A_PATHS.jsonRpc, jsonRpcEnvelope, jsonRpcHandler({ requestHandler: this.handler, userBuilder, legacyCompat: { enabled: true } }));
    app.use(A2A_PATHS.rest, restHandler({ requestHandler: this.handler, userBuilder, legacyCompat: { enabled: true } }));
    app.use((request: Request, response: Response) => {
      response.status(404).json({ error: { code: 404, status: "NOT_FOUND", message: `no A2A route ${request.method} ${request.path}` } });
    });
    // Errors Express itself raises (a body over the limit, a body that is not JSON): JSON, never an HTML page.
    app.use((error: Error & { status?: number; type?: string }, request: Request, response: Response, _next: NextFunction) => {
      const status = typeof error.status === "number" && error.status >= 400 && error.status < 600 ? error.status : 500;
      const message = error.type === "entity.too.large" ? "the message is larger than the limit (100 KB)" : status < 500 ? error.message : "internal error";
      if (status >= 500) this.#options.log.error({ err: error }, "A2A request failed");
      if (response.headersSent) return;
      if (request.originalUrl.startsWith(A2A_PATHS.jsonRpc)) {
        response.status(status).json({ jsonrpc: "2.0", id: null, error: { code: status === 413 ? -32600 : status < 500 ? -32700 : -32603, message } });
      } else {
        response.status(status).json({ error: { code: status, status: status === 413 ? "INVALID_ARGUMENT" : status < 500 ? "INVALID_ARGUMENT" : "INTERNAL", message } });
      }
    });
    return app;
  }

  #baseOf(request: FastifyRequest): string {
    return `${request.protocol}://${request.host}`;
  }

  /** Hands a request to the Express app, unread (Express reads the body with the SDK's parsers). */
  #delegate(request: FastifyRequest, reply: FastifyReply): void {
    const raw = request.raw as WithPrincipal;
    if (request.principal) raw[PRINCIPAL] = request.principal;
    reply.hijack();
    this.#base.run(this.#baseOf(request), () => this.#express(raw as IncomingMessage as Request, reply.raw as ServerResponse as Response));
  }

  /** A scope whose bodies Fastify leaves unread, for Express to read. */
  #unread(scope: FastifyInstance): void {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null, undefined));
  }

  /** The agent card, open to everyone (discovery comes before a key). */
  async registerCard(app: FastifyInstance): Promise<void> {
    await app.register(async (scope) => {
      this.#unread(scope);
      scope.get(A2A_PATHS.card, (request, reply) => this.#delegate(request, reply));
    });
  }

  /** The transports, in a scope that already names the caller (the API-key hook). */
  register(scope: FastifyInstance): void {
    this.#unread(scope);
    const delegate = (request: FastifyRequest, reply: FastifyReply) => this.#delegate(request, reply);
    scope.all(`${A2A_PATHS.jsonRpc}`, delegate);
    scope.all(`${A2A_PATHS.rest}/*`, delegate);
  }
}
