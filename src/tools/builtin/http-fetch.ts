import { convert } from "html-to-text";
import { fetch } from "undici";
import { z } from "zod";
import { errorMessage, ToolError } from "../../core/errors.js";
import { defineTool, type ToolDefinition } from "../define-tool.js";
import { checkUrl, type NetworkRules, SSRF_CODE } from "../net/address-guard.js";
import { createGuardedDispatcher } from "../net/guarded-dispatcher.js";

/** Settings of http_fetch; the config file can change them (`tools.fetch`). */
export interface HttpFetchOptions extends NetworkRules {
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  userAgent: string;
}

export const DEFAULT_HTTP_FETCH: HttpFetchOptions = {
  allowHosts: [],
  denyHosts: [],
  allowAddresses: [],
  timeoutMs: 15_000,
  maxBytes: 2 * 1024 * 1024,
  maxRedirects: 5,
  userAgent: "troupe/0.1",
};

export const HttpFetchArgs = z.object({
  url: z.url({ protocol: /^https?$/, error: "an http or https URL" }).describe("the URL to fetch"),
  method: z.enum(["GET", "POST"]).default("GET"),
  headers: z.record(z.string(), z.string()).optional().describe("request headers"),
  body: z.string().max(1024 * 1024).optional().describe("the request body (POST)"),
  format: z.enum(["text", "raw"]).default("text").describe("text: HTML converted to plain text; raw: the body as it came"),
  maxBytes: z.number().int().positive().optional().describe("read at most this many bytes of the body"),
});
export type HttpFetchArgs = z.infer<typeof HttpFetchArgs>;

export interface HttpFetchValue {
  url: string;
  status: number;
  contentType: string;
  title?: string;
  text: string;
  bytes: number;
  truncated: boolean;
  redirects: string[];
}

async function readLimited(body: AsyncIterable<Uint8Array> | null, maxBytes: number): Promise<{ bytes: Buffer; truncated: boolean; total: number }> {
  const chunks: Buffer[] = [];
  let total = 0;
  let truncated = false;
  if (!body) return { bytes: Buffer.alloc(0), truncated, total };
  for await (const chunk of body) {
    const room = maxBytes - total;
    if (chunk.byteLength > room) {
      chunks.push(Buffer.from(chunk.subarray(0, Math.max(0, room))));
      total += Math.max(0, room);
      truncated = true;
      break;
    }
    chunks.push(Buffer.from(chunk));
    total += chunk.byteLength;
  }
  return { bytes: Buffer.concat(chunks), truncated, total };
}

function isTextual(contentType: string): boolean {
  return contentType === "" || /^text\/|json|xml|javascript|x-www-form-urlencoded|yaml|csv/i.test(contentType);
}

/** The cause of undici's "fetch failed", as a ToolError. */
function failure(error: unknown, url: string): ToolError {
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth += 1) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === SSRF_CODE) return new ToolError(SSRF_CODE, cause.message, { url });
    if (!(cause as Error).cause) break;
    cause = (cause as Error).cause;
  }
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  return new ToolError("fetch_failed", `fetching ${url} failed: ${errorMessage(cause)}`, { url, retryable: code !== undefined && code !== "ENOTFOUND" });
}

/** GET or POST a URL with size and time limits, HTML turned into text, and SSRF protection at connect time. */
export function createHttpFetchTool(options: Partial<HttpFetchOptions> = {}): ToolDefinition<typeof HttpFetchArgs> {
  const settings: HttpFetchOptions = { ...DEFAULT_HTTP_FETCH, ...options };
  const dispatcher = createGuardedDispatcher(settings, settings.timeoutMs);
  return defineTool({
    name: "http_fetch",
    description: "Fetch a public http(s) URL (GET or POST) and return its text (HTML converted to plain text). Private and internal addresses are refused.",
    schema: HttpFetchArgs,
    permission: "READ",
    levelFor: (args) => (args.method === "POST" ? "WRITE" : "READ"),
    powers: ["network.read", "network.send"],
    powersFor: (args) => (args.method === "POST" ? ["network.send"] : ["network.read"]),
    idempotent: true,
    idempotentFor: (args) => args.method === "GET",
    cacheTtlMs: 60_000,
    retries: 2,
    timeoutMs: settings.timeoutMs + 1_000,
    async execute(args, context): Promise<HttpFetchValue> {
      const maxBytes = Math.min(args.maxBytes ?? settings.maxBytes, settings.maxBytes);
      let current = new URL(args.url);
      let method: string = args.method;
      let body = args.method === "POST" ? args.body : undefined;
      const redirects: string[] = [];
      const signal = context.signal ? AbortSignal.any([context.signal, AbortSignal.timeout(settings.timeoutMs)]) : AbortSignal.timeout(settings.timeoutMs);
      for (;;) {
        checkUrl(current, settings);
        let response;
        try {
          response = await fetch(current, {
            method,
            headers: { "user-agent": settings.userAgent, accept: "text/html,application/json,text/plain;q=0.9,*/*;q=0.5", ...args.headers },
            body,
            redirect: "manual",
            dispatcher,
            signal,
          });
        } catch (error) {
          throw failure(error, current.href);
        }
        const location = response.headers.get("location");
        if (response.status >= 300 && response.status < 400 && location) {
          await response.body?.cancel().catch(() => undefined);
          if (redirects.length >= settings.maxRedirects) throw new ToolError("too_many_redirects", `more than ${settings.maxRedirects} redirects from ${args.url}`, { url: args.url });
          redirects.push(current.href);
          current = new URL(location, current);
          if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
            method = "GET";
            body = undefined;
          }
          continue;
        }
        const contentType = (response.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
        const read = await readLimited(response.body as AsyncIterable<Uint8Array> | null, maxBytes);
        if (response.status >= 400) {
          const snippet = isTextual(contentType) ? read.bytes.toString("utf8").slice(0, 300) : "";
          throw new ToolError("http_error", `${current.href} answered ${response.status} ${response.statusText}${snippet ? `: ${snippet}` : ""}`, {
            status: response.status,
            retryable: response.status >= 500 || response.status === 429,
          });
        }
        if (!isTextual(contentType)) {
          return { url: current.href, status: response.status, contentType, text: `(${contentType} content, ${read.total} bytes, not shown)`, bytes: read.total, truncated: read.truncated, redirects };
        }
        const raw = read.bytes.toString("utf8");
        const html = /html/.test(contentType) || (contentType === "" && /^\s*<(!doctype|html)/i.test(raw));
        const value: HttpFetchValue = { url: current.href, status: response.status, contentType, text: raw, bytes: read.total, truncated: read.truncated, redirects };
        if (html) {
          const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(raw)?.[1]?.trim();
          if (title) value.title = title;
          if (args.format === "text") {
            value.text = convert(raw, { wordwrap: false, selectors: [{ selector: "a", options: { ignoreHref: true } }, { selector: "img", format: "skip" }] });
          }
        }
        return value;
      }
    },
    summarize: (value) => {
      const page = value as HttpFetchValue;
      return `${page.status} ${page.url}${page.title ? ` "${page.title}"` : ""}: ${page.bytes} bytes${page.truncated ? " (truncated)" : ""}`;
    },
  });
}
