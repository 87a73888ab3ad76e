import { FAILED_PREFIX } from "../../core/prompt-protocol.js";
import { type Intent, parseClause } from "./intents.js";

/** A tool result as the worker loop reports it back to the model. */
export type ToolReply = { tool: string; ok: true; value: unknown; summary?: string } | { tool: string; ok: false; error: { code: string; message: string } };

export interface ToolCallRequest {
  name: string;
  args: Record<string, unknown>;
}

export type WorkerStep = { toolCall: ToolCallRequest } | { answer: string };

/** The phrase the offline model uses when a subtask needs a real language model. */
export const NEEDS_MODEL = "needs a language model";

function asText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value, null, 2);
}

/** A value shown as a handle (too large for the prompt) is passed on as it is: the worker puts the full value in its place. */
function asArgument(value: unknown): unknown {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as Record<string, unknown>)["$stash"] === "string" ? value : asText(value);
}

function fromArgs(args: Record<string, unknown>, ...names: string[]): unknown {
  for (const name of names) if (args[name] !== undefined) return args[name];
  return undefined;
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
      const content = fromArgs(args, "content", "text", "value", "data") ?? intent.content;
      if (content === undefined) return undefined;
      const path = fromArgs(args, "path", "file") ?? intent.path;
      return done === 0 ? { name: "file_write", args: { path: asText(path), content: asArgument(content) } } : undefined;
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
        if (done === 1 && read?.ok) return { name: "json", args: { operation: "validate", text: asText((read.value as { content?: unknown }).content ?? "") } };
        return undefined;
      }
      const source = text ?? ("text" in intent.source ? intent.source.text : undefined);
      if (source === undefined) return undefined;
      return done === 0 ? { name: "json", args: { operation: "validate", text: asText(source) } } : undefined;
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
    case "map":
    case "open":
      return undefined;
  }
}

function plural(count: number, unit: string): string {
  return `${count} ${count === 1 ? unit.replace(/s$/, "") : unit}`;
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

function finalAnswer(intent: Intent, replies: ToolReply[]): string {
  const last = replies[replies.length - 1];
  if (!last) {
    if (intent.kind === "write") return `${FAILED_PREFIX} there is no content to write to ${intent.path}`;
    if (intent.kind === "json") return `${FAILED_PREFIX} there is no JSON text to check`;
    if (intent.kind === "count") return `${FAILED_PREFIX} no file was given to count the ${intent.unit} of`;
    return `The offline model cannot carry out "${intent.clause}": it ${NEEDS_MODEL}. Configure a provider (TROUPE_PROVIDER) for this part.`;
  }
  if (!last.ok) return `${FAILED_PREFIX} ${last.tool} failed (${last.error.code}): ${last.error.message}`;
  switch (last.tool) {
    case "calculator":
      return asText(last.value);
    case "file_read":
      return asText((last.value as { content?: unknown }).content ?? "");
    case "text_stats": {
      const stats = last.value as Record<string, unknown>;
      const unit = intent.kind === "count" ? intent.unit : "lines";
      return `${asText(stats.path)}: ${plural(Number(stats[unit]), unit)}`;
    }
    case "web_search":
      return searchAnswer(last.value);
    case "code_run":
      return runAnswer(last.value);
    default:
      return last.summary ?? asText(last.value);
  }
}

/**
 * The offline worker: recognise the subtask's clause, call the tools it needs one at a time, and
 * answer from their results. Subtasks it cannot do by rules get an honest answer saying so.
 */
export function workerStep(label: string, args: Record<string, unknown>, replies: ToolReply[], tools: readonly string[]): WorkerStep {
  const intent = parseClause(label, typeof args.path === "string" ? { path: args.path } : {});
  const call = nextCall(intent, args, replies);
  if (call && !replies.some((reply) => !reply.ok)) {
    if (!tools.includes(call.name)) return { answer: `${FAILED_PREFIX} this worker has no ${call.name} tool` };
    return { toolCall: call };
  }
  return { answer: finalAnswer(intent, replies) };
}
