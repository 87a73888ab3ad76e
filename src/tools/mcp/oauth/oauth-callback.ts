import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError } from "../../../core/errors.js";
import { truncate } from "../../../core/text.js";
import type { Authorizer } from "./oauth-provider.js";

/**
 * The loopback listener `troupe mcp login` waits on for the authorization server's redirect
 * (RFC 8252 §7.3): on 127.0.0.1 only, one path. Each authorization has its own `state`; the
 * redirect must bring it back (compared in constant time), so a page elsewhere cannot hand troupe
 * a code of its own choosing. An `error` the authorization server sends back ends the wait with
 * its words; so does the time limit.
 */

const PAGE = (title: string, text: string): string =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:sans-serif;margin:3em"><h1>${title}</h1><p>${text}</p></body>`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function sameText(left: string, right: string): boolean {
  const a = Buffer.from(left);
  const b = Buffer.from(right);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface Round {
  state: string;
  resolve: (code: string) => void;
  reject: (error: Error) => void;
  code: Promise<string>;
}

export class LoopbackReceiver {
  readonly redirectUrl: string;
  readonly #http: Server;
  readonly #server: string;
  readonly #timeoutMs: number;
  #round: Round | undefined;
  #closed: Promise<void> | undefined;

  private constructor(http: Server, server: string, timeoutMs: number) {
    this.#http = http;
    this.#server = server;
    this.#timeoutMs = timeoutMs;
    this.redirectUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/callback`;
    http.on("request", (request, response) => {
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      const html = { "content-type": "text/html; charset=utf-8" };
      if (request.method !== "GET" || url.pathname !== "/callback") {
        response.writeHead(404, { "content-type": "text/plain" }).end("not found");
        return;
      }
      const round = this.#round;
      if (!round || !sameText(url.searchParams.get("state") ?? "", round.state)) {
        response.writeHead(400, html).end(PAGE("Not this login", "This redirect does not belong to the login troupe is waiting for; troupe ignored it."));
        return;
      }
      const error = url.searchParams.get("error");
      const code = url.searchParams.get("code");
      if (error) {
        const description = truncate(url.searchParams.get("error_description") ?? "", 300);
        response.writeHead(400, html).end(PAGE("troupe was not authorized", escapeHtml(`${error}${description ? `: ${description}` : ""}`)));
        this.#round = undefined;
        round.reject(new ConfigError("mcp_login_required", `the authorization server of "${this.#server}" refused: ${truncate(error, 100)}${description ? `: ${description}` : ""}`, { server: this.#server }));
        return;
      }
      if (!code) {
        response.writeHead(400, html).end(PAGE("No code", "The redirect carried no authorization code."));
        return;
      }
      response.writeHead(200, html).end(PAGE("troupe is authorized", `troupe may now use the MCP server ${escapeHtml(this.#server)}. You can close this tab.`));
      this.#round = undefined;
      round.resolve(code);
    });
  }

  /** Listens on 127.0.0.1:`port` (0: a free port). */
  static async open(options: { port: number; server: string; timeoutMs: number }): Promise<LoopbackReceiver> {
    const http = createServer();
    await new Promise<void>((resolve, reject) => {
      http.once("error", (error: NodeJS.ErrnoException) =>
        reject(new ConfigError("mcp_login_required", `troupe cannot listen for the login's redirect on 127.0.0.1:${options.port}: ${error.code ?? error.message}; choose another oauth.callbackPort`, { port: options.port })),
      );
      http.listen(options.port, "127.0.0.1", () => resolve());
    });
    return new LoopbackReceiver(http, options.server, options.timeoutMs);
  }

  /** A new authorization: its state, and the code its redirect brings back (rejected past the time limit). */
  expect(): { state: string; code: Promise<string> } {
    this.#round?.reject(new ConfigError("mcp_login_required", "another authorization began"));
    const state = randomBytes(24).toString("base64url");
    let settle: Pick<Round, "resolve" | "reject"> = { resolve: () => {}, reject: () => {} };
    const code = new Promise<string>((resolve, reject) => {
      settle = { resolve, reject };
    });
    code.catch(() => undefined);
    const timer = setTimeout(() => settle.reject(new ConfigError("mcp_login_required", `nobody finished the login of "${this.#server}" within ${Math.round(this.#timeoutMs / 1000)} s`, { server: this.#server })), this.#timeoutMs);
    timer.unref();
    void code.finally(() => clearTimeout(timer)).catch(() => undefined);
    this.#round = { state, code, ...settle };
    return { state, code };
  }

  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      this.#round?.reject(new ConfigError("mcp_login_required", "the login was stopped"));
      this.#round = undefined;
      this.#http.closeAllConnections();
      this.#http.close(() => resolve());
    });
    return this.#closed;
  }
}

/**
 * An authorizer on a loopback receiver: each authorization gets a fresh state, the person is sent
 * to the URL by `present` (the CLI prints it, and opens it when asked), and the code comes back
 * through the receiver.
 */
export function loopbackAuthorizer(receiver: LoopbackReceiver, present: (url: URL) => void | Promise<void>): Authorizer {
  let pending: { state: string; code: Promise<string> } | undefined;
  return {
    redirectUrl: receiver.redirectUrl,
    state: () => {
      pending = receiver.expect();
      return pending.state;
    },
    authorize: async (url) => {
      const round = pending ?? receiver.expect();
      pending = undefined;
      await present(url);
      return round.code;
    },
  };
}
