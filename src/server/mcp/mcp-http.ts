import { randomUUID } from "node:crypto";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ErrorCode, isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { asTroupeError, statusFor } from "../error-handler.js";
import type { Principal } from "../config.js";
import type { RunFeed } from "../run-follow.js";
import { type EventStoreLimits, SessionEventStore } from "./mcp-event-store.js";
import { createTroupeMcpServer } from "./mcp-server.js";

interface Session {
  id: string;
  principal: Principal;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  events: SessionEventStore;
  lastSeen: number;
}

export interface McpSessionLimits {
  /** Sessions one principal may hold open at once; the oldest idle one is closed to make room. */
  perPrincipal: number;
  /** A session with no request for this long is closed. */
  idleMs: number;
  /** What one session keeps for a client that reconnects with Last-Event-ID. */
  events: EventStoreLimits;
}

const DEFAULT_LIMITS: McpSessionLimits = { perPrincipal: 32, idleMs: 60 * 60 * 1000, events: { maxEvents: 2_000, maxBytes: 1024 * 1024 } };

/** The SSE `retry` troupe suggests: how long a client waits before it reconnects to a dropped stream. */
export const SSE_RETRY_MS = 1_000;

/** A JSON-RPC error answer, as MCP clients read a refused request. */
function rpcError(reply: FastifyReply, status: number, code: number, message: string, id: unknown = null): FastifyReply {
  return reply.code(status).type("application/json; charset=utf-8").send({ jsonrpc: "2.0", error: { code, message }, id });
}

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * `/mcp` in `troupe serve`: the MCP Streamable HTTP transport of the official SDK, one stateful
 * session per client (so the server can ask the client — elicitation — and stream progress),
 * each acting for the principal whose API key opened it: a session id presented with another
 * key is not found. Bodies are read by troupe (the server's body limit), and a body that is not
 * JSON, a request before `initialize`, an unknown session, a Host that does not name troupe and a
 * cross-site Origin (the app's host policy, host-policy.ts, in the JSON-RPC form here) are JSON-RPC
 * errors. Runs belong to the task service, not the session: closing a session stops no run.
 *
 * Resumable: every SSE stream starts with a priming event (an id and `retry`), each message has an
 * event id, and a client whose stream dropped reconnects (GET with `Last-Event-ID`) to get what it
 * missed — a tool call's progress, logs and result included — from the session's bounded store
 * (mcp-event-store.ts). An id this session does not keep (forged, another session's, too old) is
 * refused with 400 before anything is replayed.
 */
export class McpSessions {
  readonly #feed: RunFeed;
  readonly #log: Logger;
  readonly #limits: McpSessionLimits;
  readonly #sessions = new Map<string, Session>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(feed: RunFeed, log: Logger, limits: Partial<Omit<McpSessionLimits, "events">> & { events?: Partial<EventStoreLimits> } = {}) {
    this.#feed = feed;
    this.#log = log;
    this.#limits = { ...DEFAULT_LIMITS, ...limits, events: { ...DEFAULT_LIMITS.events, ...limits.events } };
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(60_000, this.#limits.idleMs)).unref();
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Registers POST, GET and DELETE /mcp in a scope that already names the caller (the API-key hook). */
  register(scope: FastifyInstance): void {
    // The body as text: a body that is not JSON is answered as JSON-RPC asks (-32700), not in troupe's envelope.
    scope.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => done(null, body));
    scope.setErrorHandler((error, _request, reply) => {
      const troupeError = asTroupeError(error);
      const status = statusFor(troupeError);
      if (status === 401) reply.header("www-authenticate", 'Bearer realm="troupe"');
      return rpcError(reply, status, status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidRequest, `${troupeError.code}: ${troupeError.message}`);
    });
    const handle = (request: FastifyRequest, reply: FastifyReply) => this.#handle(request, reply);
    scope.post("/mcp", handle);
    scope.get("/mcp", handle);
    scope.delete("/mcp", handle);
  }

  async #handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    let body: unknown;
    if (request.method === "POST") {
      try {
        body = JSON.parse(typeof request.body === "string" ? request.body : "");
      } catch {
        return rpcError(reply, 400, ErrorCode.ParseError, "Parse error: the body is not JSON");
      }
    }
    const sessionId = headerOf(request, "mcp-session-id");
    let session: Session | undefined;
    if (sessionId !== undefined) {
      session = this.#sessions.get(sessionId);
      // Another key's session is as good as missing.
      if (!session || session.principal.id !== request.principal.id) return rpcError(reply, 404, ErrorCode.InvalidRequest, "Session not found: initialize a new session");
    } else if (request.method === "POST" && (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body))) {
      session = await this.#open(request.principal);
    } else {
      return rpcError(reply, 400, ErrorCode.InvalidRequest, "Bad Request: no valid session id (send initialize first, then the Mcp-Session-Id it gave)");
    }
    const lastEventId = headerOf(request, "last-event-id");
    if (request.method === "GET" && lastEventId !== undefined && !session.events.has(lastEventId)) {
      return rpcError(
        reply,
        400,
        ErrorCode.InvalidRequest,
        `Last-Event-ID ${JSON.stringify(lastEventId.slice(0, 64))} is not an event this session keeps (never sent here, or too old): what followed it cannot be replayed; open a new stream without it, and read a run again with get_run`,
      );
    }
    session.lastSeen = Date.now();
    reply.hijack();
    try {
      await session.transport.handleRequest(request.raw, reply.raw, body);
    } catch (error) {
      this.#log.error({ err: error, sessionId: session.id }, "MCP request failed");
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: ErrorCode.InternalError, message: "internal error" }, id: null }));
    }
    return undefined;
  }

  async #open(principal: Principal): Promise<Session> {
    const mine = [...this.#sessions.values()].filter((session) => session.principal.id === principal.id).sort((a, b) => a.lastSeen - b.lastSeen);
    for (const old of mine.slice(0, Math.max(0, mine.length - this.#limits.perPrincipal + 1))) await this.#close(old.id, "too many sessions for this key");
    const server = createTroupeMcpServer(this.#feed, principal);
    const events = new SessionEventStore(this.#limits.events);
    const session: Session = { id: "", principal, server, events, lastSeen: Date.now(), transport: undefined as unknown as StreamableHTTPServerTransport };
    session.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: events,
      retryInterval: SSE_RETRY_MS,
      onsessioninitialized: (id) => {
        session.id = id;
        this.#sessions.set(id, session);
        this.#log.info({ sessionId: id, principal: principal.id }, "MCP session opened");
      },
      onsessionclosed: (id) => {
        this.#sessions.delete(id);
      },
    });
    session.transport.onclose = () => {
      if (session.id) this.#sessions.delete(session.id);
    };
    await server.connect(session.transport);
    return session;
  }

  async #close(id: string, why: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    this.#log.info({ sessionId: id, why }, "MCP session closed");
    await session.server.close().catch(() => undefined);
  }

  #sweep(): void {
    const now = Date.now();
    for (const session of [...this.#sessions.values()]) {
      if (now - session.lastSeen > this.#limits.idleMs) void this.#close(session.id, "idle");
    }
  }

  /** Closes every session (the server is stopping); runs are not touched. */
  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    await Promise.all([...this.#sessions.keys()].map((id) => this.#close(id, "shutting down")));
  }
}
