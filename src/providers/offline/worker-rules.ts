import { FAILED_PREFIX, HANDLE_KEY, UNABLE_PREFIX } from "../../core/prompt-protocol.js";
import { type Intent, parseClause } from "./intents.js";

/** A tool result as the worker loop reports it back to the model (with the handle of its value). */
export type ToolReply =
  | { tool: string; ok: true; value: unknown; summary?: string | undefined; handle?: string }
  | { tool: string; ok: false; error: { code: string; message: string } };

export interface ToolCallRequest {
  name: string;
  args: Record<string, unknown>;
}

/** How the offline worker ends a subtask (the arguments of `submit_result`). */
export interface Submission {
  status: "done" | "failed" | "unable";
  result?: string;
  from?: string;
  path?: string;
  reason?: string;
}

export type WorkerStep = { toolCall: ToolCallRequest } | { submit: Submission };

/** The phrase the offline model uses when a subtask needs a real language model. */
export const NEEDS_MODEL = "needs a language model";

/** A submission in words, for a caller that did not offer the outcome tool. */
export function submissionText(submission: Submission): string {
  if (submission.status === "failed") return `${FAILED_PREFIX} ${submission.reason ?? ""}`.trim();
  if (submission.status === "unable") return `${UNABLE_PREFIX} ${submission.reason ?? ""}`.trim();
  return submission.result ?? `(the result is ${submission.from ?? "?"} ${submission.path ?? "$"})`;
}

function asText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value, null, 2);
}

function isHandle(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as Record<string, unknown>)[HANDLE_KEY] === "string";
}

function fromArgs(args: Record<string, unknown>, ...names: string[]): unknown {
  for (const name of names) if (args[name] !== undefined) return args[name];
  return undefined;
}

/**
 * A value to hand to a tool exactly: an argument of the subtask goes by its handle (the worker
 * puts the whole value in its place), never retyped; anything else as text.
 */
function exactly(args: Record<string, unknown>, names: string[], fallback: unknown): unknown {
  for (const name of names) {
    const value = args[name];
    if (value === undefined) continue;
    return isHandle(value) ? value : { [HANDLE_KEY]: `args.${name}` };
  }
  return fallback === undefined ? undefined : asText(fallback);
}

/** The tool calls an intent needs, given what has been returned so far. */
function nextCall(intent: Intent, args: Record<string, unknown>, replies: ToolReply[]): ToolCallRequest | undefined {
  const done = replies.length;
  switch (intent.kind) {
    case "compute": {
      const expression = fromArgs(args, "expression") ?? intent.expression;
      return done === 0 ? { name: "calculator", args: { expression: asText(expression) } } : undefined;
    }
    case "write": {
      const content = exactly(args, ["content", "text", "value", "data"], intent.content);
      if (content === undefined) return undefined;
      const path = fromArgs(args, "path", "file") ?? intent.path;
      return done === 0 ? { name: "file_write", args: { path: asText(path), content } } : undefined;
    }
    case "read":
      return done === 0 ? { name: "file_read", args: { path: asText(fromArgs(args, "path", "file") ?? intent.path) } } : undefined;
    case "list":
      return done === 0
        ? { name: "file_list", args: { path: asText(fromArgs(args, "path") ?? intent.path), recursive: Boolean(fromArgs(args, "recursive") ?? intent.recursive) } }
        : undefined;
    case "json": {
      const text = fromArgs(args, "text", "json", "content");
      const path = fromArgs(args, "path", "file") ?? ("path" in intent.source ? intent.source.path : undefined);
      if (text === undefined && path !== undefined) {
        if (done === 0) return { name: "file_read", args: { path: asText(path) } };
        const read = replies[0];
        if (done === 1 && read?.ok) return { name: "json", args: { operation: "validate", text: { [HANDLE_KEY]: read.handle ?? "results.1" } } };
        return undefined;
      }
      const source = text !== undefined ? exactly(args, ["text", "json", "content"], undefined) : "text" in intent.source ? intent.source.text : undefined;
      if (source === undefined) return undefined;
      return done === 0 ? { name: "json", args: { operation: "validate", text: source } } : undefined;
    }
    case "count": {
      const path = fromArgs(args, "path", "file") ?? intent.path;
      if (path === undefined) return undefined;
      return done === 0 ? { name: "text_stats", args: { path: asText(path) } } : undefined;
    }
    case "search": {
      const query = fromArgs(args, "query", "q") ?? intent.query;
      return done === 0 ? { name: "web_search", args: { query: asText(query) } } : undefined;
    }
    case "run": {
      const code = fromArgs(args, "code", "source") ?? intent.code;
      const path = fromArgs(args, "path", "file") ?? intent.path;
      const language = asText(fromArgs(args, "language") ?? intent.language);
      if (done > 0) return undefined;
      return code !== undefined ? { name: "code_run", args: { language, code: asText(code) } } : { name: "code_run", args: { language, path: asText(path) } };
    }
    case "copy":
    case "move": {
      const from = asText(fromArgs(args, "from", "source") ?? intent.from);
      const to = asText(fromArgs(args, "to", "destination", "target") ?? intent.to);
      // Like cp and mv, onto an existing file too.
      return done === 0 ? { name: intent.kind === "copy" ? "file_copy" : "file_move", args: { from, to, overwrite: true } } : undefined;
    }
    case "delete":
      return done === 0 ? { name: "file_delete", args: { path: asText(fromArgs(args, "path", "file") ?? intent.path) } } : undefined;
    case "map":
    case "open":
      return undefined;
  }
}

interface SearchHitView {
  title?: string;
  path?: string;
  url?: string;
  snippet?: string;
}

function searchAnswer(value: unknown): string {
  const found = value as { query?: string; results?: SearchHitView[] };
  const hits = found.results ?? [];
  if (hits.length === 0) return `Nothing found for "${found.query ?? ""}".`;
  return [
    `${hits.length} result(s) for "${found.query ?? ""}":`,
    ...hits.map((hit, index) => `${index + 1}. ${hit.title ?? ""} (${hit.path ?? hit.url ?? ""}): ${hit.snippet ?? ""}`),
  ].join("\n");
}

function runAnswer(value: unknown): string {
  const run = value as { result?: unknown; stdout?: string };
  const printed = (run.stdout ?? "").trim();
  const result = run.result === undefined || run.result === null ? "" : asText(run.result);
  return [printed, result].filter(Boolean).join("\n") || "(the code ran and printed nothing)";
}

/** The handle of the last reply's value (the worker numbers its tool outputs from 1). */
function handleOf(replies: ToolReply[]): string {
  const last = replies[replies.length - 1];
  return (last?.ok ? last.handle : undefined) ?? `results.${replies.length}`;
}

function finalSubmission(intent: Intent, replies: ToolReply[]): Submission {
  const last = replies[replies.length - 1];
  if (!last) {
    if (intent.kind === "write") return { status: "failed", reason: `there is no content to write to ${intent.path}` };
    if (intent.kind === "json") return { status: "failed", reason: "there is no JSON text to check" };
    if (intent.kind === "count") return { status: "failed", reason: `no file was given to count the ${intent.unit} of` };
    return { status: "unable", reason: `the offline model cannot carry out "${intent.clause}": it ${NEEDS_MODEL}. Configure a provider (TROUPE_PROVIDER) for this part.` };
  }
  if (!last.ok) return { status: "failed", reason: `${last.tool} failed (${last.error.code}): ${last.error.message}` };
  const handle = handleOf(replies);
  switch (last.tool) {
    case "calculator":
      return { status: "done", from: handle, path: "$" };
    case "file_read":
      return { status: "done", from: handle, path: "$.content" };
    case "text_stats": {
      const unit = intent.kind === "count" ? intent.unit : "lines";
      return { status: "done", from: handle, path: `$.${unit}` };
    }
    case "web_search":
      return { status: "done", result: searchAnswer(last.value) };
    case "code_run":
      return { status: "done", result: runAnswer(last.value) };
    default:
      return { status: "done", result: last.summary ?? asText(last.value) };
  }
}

/**
 * The offline worker: recognise the subtask's clause, call the tools it needs one at a time, and
 * end with a structured outcome — done with the tool's value passed on by its handle (exactly),
 * failed with the tool's error, or unable when the clause needs a language model.
 */
export function workerStep(label: string, args: Record<string, unknown>, replies: ToolReply[], tools: readonly string[]): WorkerStep {
  const intent = parseClause(label, typeof args.path === "string" ? { path: args.path } : {});
  const call = nextCall(intent, args, replies);
  if (call && !replies.some((reply) => !reply.ok)) {
    if (!tools.includes(call.name)) return { submit: { status: "failed", reason: `this worker has no ${call.name} tool` } };
    return { toolCall: call };
  }
  return { submit: finalSubmission(intent, replies) };
}
