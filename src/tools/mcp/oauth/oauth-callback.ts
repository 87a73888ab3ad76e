import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError } from "../../../core/errors.js";
import { truncate } from "../../../core/text.js";

/**
 * The loopback listener `troupe mcp login` waits on for the authorization server's redirect
 * (RFC 8252 §7.3): on 127.0.0.1 only, one path, one use. The redirect must carry the `state`
 * troupe sent (compared in constant time), so a page elsewhere cannot hand troupe a code of its
 * own choosing; an `error` the authorization server sends back ends the wait with its words.
 */

export interface CallbackListener {
  readonly redirectUrl: string;
  readonly state: string;
  /** Resolves with the code; rejects on the authorization server's error, the timeout, or `close`. */
  readonly code: Promise<string>;
  close(): Promise<void>;
}

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

export async function listenForCallback(options: { port: number; timeoutMs: number; server: string }): Promise<CallbackListener> {
  const state = randomBytes(24).toString("base64url");
  let settle: { resolve: (code: string) => void; reject: (error: Error) => void } | undefined;
  const code = new Promise<string>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // Nobody may be waiting on it yet: a rejection is still handled.
  code.catch(() => undefined);
  const http: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (request.method !== "GET" || url.pathname !== "/callback") {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    const given = url.searchParams.get("state") ?? "";
    if (!sameText(given, state)) {
      response.writeHead(400, { "content-type": "text/html; charset=utf-8" }).end(PAGE("Not this login", "This redirect does not belong to the login troupe is waiting for; troupe ignored it."));
      return;
    }
    const error = url.searchParams.get("error");
    const received = url.searchParams.get("code");
    if (error) {
      const description = truncate(url.searchParams.get("error_description") ?? "", 300);
      response.writeHead(400, { "content-type": "text/html; charset=utf-8" }).end(PAGE("troupe was not authorized", escapeHtml(`${error}${description ? `: ${description}` : ""}`)));
      settle?.reject(new ConfigError("mcp_login_required", `the authorization server of "${options.server}" refused: ${truncate(error, 100)}${description ? `: ${description}` : ""}`, { server: options.server }));
      return;
    }
    if (!received) {
      response.writeHead(400, { "content-type": "text/html; charset=utf-8" }).end(PAGE("No code", "The redirect carried no authorization code."));
      return;
    }
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE("troupe is authorized", `troupe may now use the MCP server ${escapeHtml(options.server)}. You can close this tab.`));
    settle?.resolve(received);
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", (error: NodeJS.ErrnoException) =>
      reject(new ConfigError("mcp_login_required", `troupe cannot listen for the login's redirect on 127.0.0.1:${options.port}: ${error.code ?? error.message}; choose another oauth.callbackPort`, { port: options.port })),
    );
    http.listen(options.port, "127.0.0.1", () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  const timer = setTimeout(() => settle?.reject(new ConfigError("mcp_login_required", `nobody finished the login of "${options.server}" within ${Math.round(options.timeoutMs / 1000)} s`, { server: options.server })), options.timeoutMs);
  timer.unref();
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      clearTimeout(timer);
      settle?.reject(new ConfigError("mcp_login_required", "the login was stopped"));
      http.closeAllConnections();
      http.close(() => resolve());
    });
    return closed;
  };
  return { redirectUrl: `http://127.0.0.1:${port}/callback`, state, code, close };
}
