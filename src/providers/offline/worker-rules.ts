import { selectPath } from "../../core/json-path.js";
import { FAILED_PREFIX, HANDLE_KEY, UNABLE_PREFIX } from "../../core/prompt-protocol.js";
import { type Intent, parseClause } from "./intents.js";
import { questionPath } from "./json-questions.js";
import { asText, filledExpression, isHandle, templatePieces } from "./templates.js";

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

/**
 * A submission in words, for a caller that did not offer the outcome tool: a handle is replaced
 * by the value it names in the tool replies (`results.N` is the N-th).
 */
export function submissionText(submission: Submission, replies: ToolReply[] = []): string {
  if (submission.status === "failed") return `${FAILED_PREFIX} ${submission.reason ?? ""}`.trim();
  if (submission.status === "unable") return `${UNABLE_PREFIX} ${submission.reason ?? ""}`.trim();
  if (submission.result !== undefined) return submission.result;
  const reply = /^results\.(\d+)$/.exec(submission.from ?? "")?.[1];
  const source = reply === undefined ? undefined : replies[Number(reply) - 1];
  if (source?.ok) {
    try {
      return asText(selectPath(source.value, submission.path ?? "$", submission.from ?? "the result"));
    } catch {
      // A path that does not fit the value as shown: name the handle instead.
    }
  }
  return `(the result is ${submission.from ?? "?"} ${submission.path ?? "$"})`;
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

/** The text of a file read in this conversation, when the whole of it was shown; undefined when it was cut. */
function shownContent(reply: ToolReply | undefined): string | undefined {
  if (!reply?.ok || typeof reply.value !== "object" || reply.value === null) return undefined;
  const value = reply.value as { content?: unknown; encoding?: unknown; truncated?: unknown };
  return typeof value.content === "string" && value.encoding !== "base64" && value.truncated !== true ? value.content : undefined;
}

/** The json tool's query for a question in words, built from the question and the data it is asked of. */
/** The keys a preview of JSON text shows (escaped or not): what can be seen of the shape of data too large to show whole. */
function keysShown(preview: unknown): string[] {
  if (typeof preview !== "string") return [];
  return [...new Set([...preview.matchAll(/\\?"([A-Za-z_][\w -]{0,60})\\?"\s*:/g)].map((match) => match[1] ?? ""))];
}

function queryCall(intent: Extract<Intent, { kind: "query" }>, text: unknown, preview?: unknown): ToolCallRequest | Submission {
  let data: unknown;
  let visible = false;
  if (typeof text === "string") {
    try {
      data = JSON.parse(text);
      visible = true;
    } catch {
      // Not JSON: the tool says where it breaks.
      return { name: "json", args: { operation: "query", text: text, path: "$" } };
    }
  }
  const found = questionPath(intent.question, data, visible, keysShown(preview));
  if ("problem" in found) return { status: "failed", reason: `${intent.path}: ${found.problem}` };
  return { name: "json", args: { operation: "query", path: found.path } };
}

/** The tool calls an intent needs, given what has been returned so far; a submission when it can go no further. */
function nextCall(intent: Intent, args: Record<string, unknown>, replies: ToolReply[]): ToolCallRequest | Submission | undefined {
  const done = replies.length;
  switch (intent.kind) {
    case "compute": {
      if (done > 0) return undefined;
      const template = asText(fromArgs(args, "expression") ?? intent.expression);
      const filled = filledExpression(template, args);
      if ("unable" in filled) return { status: "unable", reason: `${filled.unable}; working out which it ${NEEDS_MODEL}` };
      if ("failed" in filled) return { status: "failed", reason: filled.failed };
      return { name: "calculator", args: { expression: filled.expression } };
    }
    case "write": {
      const path = asText(fromArgs(args, "path", "file") ?? intent.path);
      const template = fromArgs(args, "template");
      if (typeof template === "string") {
        const pieces = templatePieces(template, args);
        if ("missing" in pieces) return { status: "unable", reason: `the file's content refers to a result it was not given (${pieces.missing}); working out which it ${NEEDS_MODEL}` };
        const piece = pieces[done];
        if (!piece) return undefined;
        const content = "text" in piece ? piece.text : piece.handle;
        // The first piece makes the file; the others are added to its end.
        return { name: done === 0 ? "file_write" : "file_append", args: { path, content } };
      }
      const content = exactly(args, ["content", "text", "value", "data"], intent.content);
      if (content === undefined) return undefined;
      return done === 0 ? { name: "file_write", args: { path, content } } : undefined;
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
        if (done > 1) return undefined;
        // The file's text as it was shown, exactly; a file too large to be shown whole cannot be checked this way.
        const content = shownContent(replies[0]);
        if (content === undefined) return { status: "failed", reason: `${asText(path)} is too large to check here: give its content to the subtask by reference` };
        return { name: "json", args: { operation: "validate", text: content } };
      }
      const source = text !== undefined ? exactly(args, ["text", "json", "content"], undefined) : "text" in intent.source ? intent.source.text : undefined;
      if (source === undefined) return undefined;
      return done === 0 ? { name: "json", args: { operation: "validate", text: source } } : undefined;
    }
    case "query": {
      const given = fromArgs(args, "text", "json", "content");
      if (given !== undefined) {
        if (done > 0) return undefined;
        const call = isHandle(given) ? queryCall(intent, undefined, (given as { preview?: unknown }).preview) : queryCall(intent, given);
        // The data goes to the tool by its handle, never retyped.
        return "name" in call ? { ...call, args: { ...call.args, text: exactly(args, ["text", "json", "content"], undefined) } } : call;
      }
      const path = asText(fromArgs(args, "path", "file") ?? intent.path);
      if (done === 0) return { name: "file_read", args: { path } };
      if (done > 1) return undefined;
      const content = shownContent(replies[0]);
      if (content === undefined) return { status: "failed", reason: `${path} is too large to query here: give its content to the subtask by reference` };
      const call = queryCall(intent, content);
      return "name" in call ? { ...call, args: { ...call.args, text: content } } : call;
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
    case "delete": {
      const recursive = fromArgs(args, "recursive") ?? intent.recursive;
      const path = asText(fromArgs(args, "path", "file") ?? intent.path);
      return done === 0 ? { name: "file_delete", args: recursive ? { path, recursive: true } : { path } } : undefined;
    }
    case "remember": {
      if (done > 0) return undefined;
      const text = asText(fromArgs(args, "text", "fact") ?? intent.fact);
      const subject = fromArgs(args, "subject") ?? intent.subject;
      return { name: "memory_save", args: subject === undefined ? { text } : { text, subject: asText(subject) } };
    }
    case "recall":
      return done === 0 ? { name: "memory_search", args: { query: asText(fromArgs(args, "query", "q") ?? intent.query) } } : undefined;
    case "forget": {
      const query = asText(fromArgs(args, "query", "q") ?? intent.query);
      if (done === 0) return { name: "memory_search", args: { query } };
      if (done > 1) return undefined;
      const fact = answeringFact(query, replies[0]);
      // Only a fact that is plainly about what was named is forgotten; a loose match is not.
      if (!fact) return { status: "failed", reason: `nothing remembered is about "${query}", so nothing was forgotten` };
      return { name: "memory_forget", args: { id: fact.id } };
    }
    case "map":
    case "open":
    case "previous":
      return undefined;
  }
}

/** Words of a question or a fact that carry its meaning (lower case, a plural's s dropped). */
function contentWords(text: string): string[] {
  const stop = new Set("a an the of to in on at for and or is are was were be by with what who where when which whose do does did you we i me my your our about tell know remember recall that this it its there".split(" "));
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => !stop.has(word)).map((word) => (word.length > 3 ? word.replace(/s$/, "") : word));
}

/**
 * The remembered fact that answers a question by rules: the best-ranked one holding every word
 * of the question that carries meaning. A fact that shares only some words (the capital of
 * Atlantis, asked about the capital of France) does not answer it.
 */
function answeringFact(query: string, reply: ToolReply | undefined): { id: string; text: string; index: number } | undefined {
  if (!reply?.ok) return undefined;
  const items = ((reply.value as { items?: Array<{ id?: unknown; text?: unknown }> } | undefined)?.items ?? []).flatMap((item, index) =>
    typeof item.id === "string" && typeof item.text === "string" ? [{ id: item.id, text: item.text, index }] : [],
  );
  const wanted = contentWords(query);
  if (wanted.length === 0) return undefined;
  return items.find((item) => {
    const words = new Set(contentWords(item.text));
    return wanted.every((word) => words.has(word));
  });
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

/**
 * The answer to a question over JSON, from the query's matches by handle: how many, the one
 * value a question in the singular asks for, or the list.
 */
function queryAnswer(intent: Extract<Intent, { kind: "query" }>, value: unknown, handle: string): Submission {
  const result = (typeof value === "object" && value !== null ? value : {}) as { valid?: boolean; error?: string; matches?: unknown[] };
  if (result.valid === false) return { status: "failed", reason: `${intent.path} is not valid JSON: ${result.error ?? "it does not parse"}` };
  if (intent.question.count) return { status: "done", from: handle, path: "$.matches.length" };
  if (intent.question.singular && Array.isArray(result.matches) && result.matches.length === 1) return { status: "done", from: handle, path: "$.matches[0]" };
  return { status: "done", from: handle, path: "$.matches" };
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
    case "file_read": {
      // Bytes that are not text came base64-encoded: the whole read value goes on, so whatever writes it keeps the encoding.
      const value = last.value as { encoding?: unknown } | undefined;
      const base64 = value?.encoding === "base64" || /\(base64\)/.test(last.summary ?? "");
      return { status: "done", from: handle, path: base64 ? "$" : "$.content" };
    }
    case "text_stats": {
      const unit = intent.kind === "count" ? intent.unit : "lines";
      return { status: "done", from: handle, path: `$.${unit}` };
    }
    case "file_append": {
      // A file made in pieces: what it holds now.
      const bytes = (last.value as { bytes?: number } | undefined)?.bytes;
      return { status: "done", result: `wrote ${intent.kind === "write" ? intent.path : "the file"}${bytes === undefined ? "" : ` (${bytes} bytes)`}` };
    }
    case "json":
      if (intent.kind === "query") return queryAnswer(intent, last.value, handle);
      return { status: "done", result: last.summary ?? asText(last.value) };
    case "web_search":
      return { status: "done", result: searchAnswer(last.value) };
    case "memory_search": {
      const query = intent.kind === "recall" || intent.kind === "forget" ? intent.query : "";
      const fact = answeringFact(query, last);
      if (!fact) {
        return { status: "unable", reason: `nothing remembered answers "${query}"; answering it from general knowledge ${NEEDS_MODEL}` };
      }
      return { status: "done", from: handle, path: `$.items[${fact.index}].text` };
    }
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
export function workerStep(label: string, args: Record<string, unknown>, allReplies: ToolReply[], tools: readonly string[]): WorkerStep {
  const intent = subtaskIntent(label, args);
  // find_tools is how it asks for a tool it was not offered; its replies are not the work's.
  const searched = allReplies.some((reply) => reply.tool === FIND_TOOLS);
  const replies = allReplies.filter((reply) => reply.tool !== FIND_TOOLS);
  const next = nextCall(intent, args, replies);
  if (next && "status" in next) return { submit: next };
  if (next && !replies.some((reply) => !reply.ok)) {
    if (!tools.includes(next.name)) {
      if (tools.includes(FIND_TOOLS) && !searched) return { toolCall: { name: FIND_TOOLS, args: { query: next.name.replace(/[_.]/g, " ") } } };
      return { submit: { status: "failed", reason: `this worker has no ${next.name} tool` } };
    }
    return { toolCall: next };
  }
  return { submit: finalSubmission(intent, replies) };
}

/** The worker's tool for asking for tools it was not offered. */
const FIND_TOOLS = "find_tools";

/** What the subtask asks for: its label read as a clause, or — given an expression to evaluate — a computation, whatever the label's words. */
function subtaskIntent(label: string, args: Record<string, unknown>): Intent {
  const intent = parseClause(label, typeof args.path === "string" ? { path: args.path } : {});
  if (intent.kind !== "compute" && intent.kind !== "write" && typeof args.expression === "string") {
    return { kind: "compute", clause: label, expression: args.expression, usesPrevious: false };
  }
  return intent;
}
