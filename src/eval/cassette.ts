import { createHash } from "node:crypto";
import { rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { readUserFile } from "../core/user-files.js";
import type { BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { InputError } from "../core/errors.js";
import { roleOf } from "../core/prompt-protocol.js";
import { stableStringify } from "../core/text.js";

/**
 * Cassettes: every model request of a case and the reply it got, one JSON file per case
 * (`<dir>/<case id>.json`), keyed by a hash of the request. The request is normalised before it
 * is hashed, so the same case asks the same thing on every run: tool call and message ids,
 * abort signals and LangGraph's runtime options are left out, and durations, timestamps, UUIDs
 * and the case's own folders are replaced by placeholders.
 */

export const CASSETTE_VERSION = 1;

/** The call options that shape a model's answer; the rest (signals, callbacks, LangGraph's runtime) say nothing about it. */
const ANSWER_OPTIONS = [
  "tools",
  "tool_choice",
  "response_format",
  "strict",
  "parallel_tool_calls",
  "stop",
  "functions",
  "function_call",
  "ls_structured_output_format",
  "format",
  "output_format",
  "thinking",
  "reasoning",
  "reasoning_effort",
  "temperature",
  "top_p",
  "seed",
  "max_tokens",
] as const;

/** A recorded AI message: what LangChain's AIMessage carries, as plain JSON. */
export const RecordedMessage = z.object({
  content: z.unknown(),
  tool_calls: z.array(z.object({ id: z.string().optional(), name: z.string(), args: z.record(z.string(), z.unknown()) }).loose()).optional(),
  invalid_tool_calls: z.array(z.looseObject({})).optional(),
  additional_kwargs: z.record(z.string(), z.unknown()).optional(),
  response_metadata: z.record(z.string(), z.unknown()).optional(),
  usage_metadata: z.looseObject({ input_tokens: z.number(), output_tokens: z.number(), total_tokens: z.number() }).optional(),
  id: z.string().optional(),
  name: z.string().optional(),
});
export type RecordedMessage = z.infer<typeof RecordedMessage>;

export const RecordedReply = z.object({
  generations: z.array(z.object({ text: z.string(), message: RecordedMessage, generationInfo: z.record(z.string(), z.unknown()).optional() })).min(1),
  llmOutput: z.record(z.string(), z.unknown()).optional(),
});
export type RecordedReply = z.infer<typeof RecordedReply>;

export const CassetteEntry = z.object({
  hash: z.string(),
  /** `provider:model`. */
  model: z.string(),
  /** The troupe role named in the system prompt (planner, critic, a worker's agent, judge). */
  role: z.string().nullable(),
  /** The normalised request that was hashed, kept to see what a missing request differs from. */
  request: z.unknown(),
  reply: RecordedReply.optional(),
  /** The call failed while recording (the run then retried or fell back): replayed as a failure. */
  failure: z.string().optional(),
});
export type CassetteEntry = z.infer<typeof CassetteEntry>;

export const CassetteFile = z.object({
  version: z.literal(CASSETTE_VERSION),
  case: z.string(),
  task: z.string(),
  recordedAt: z.string(),
  entries: z.array(CassetteEntry),
});
export type CassetteFile = z.infer<typeof CassetteFile>;

/** The cassette file of a case. */
export function cassettePath(directory: string, caseId: string): string {
  return path.join(directory, `${caseId}.json`);
}

/** Reads a case's cassette; undefined when it has none. A malformed file is bad input, named. */
export async function readCassette(file: string): Promise<CassetteFile | undefined> {
  let text: string;
  try {
    text = await readUserFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new InputError("cassette_unreadable", `${file}: ${(error as Error).message}`, { path: file });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InputError("cassette_invalid", `${file}: not JSON (${(error as Error).message})`, { path: file });
  }
  const parsed = CassetteFile.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError("cassette_invalid", `${file}: not a troupe cassette (${issue?.path.join(".") || "file"}: ${issue?.message ?? "invalid"})`, { path: file });
  }
  return parsed.data;
}

/** Writes a cassette whole (a temporary file renamed over it), so a reader never sees half of one. */
export async function writeCassette(file: string, cassette: CassetteFile): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(cassette, null, 1)}\n`);
  await rename(temporary, file);
}

/** Replaces what differs between two runs of the same case (durations, timestamps, ids, its folders) with placeholders. */
export function stableText(text: string, volatile: readonly string[]): string {
  let stable = text;
  for (const value of volatile) if (value) stable = stable.split(value).join("<workspace>");
  return stable
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<uuid>")
    .replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, "<time>")
    .replace(/("(?:durationMs|duration_ms|elapsedMs|latencyMs|at|startedAt|endedAt|createdAt|updatedAt|finishedAt)\\?"\s*:\s*)\d+(?:\.\d+)?/g, "$10")
    .replace(/\b\d+(?:\.\d+)? ?ms\b/g, "<n> ms");
}

/** A value as plain JSON: class instances by their toJSON or their name, functions and undefined left out. */
function plain(value: unknown, volatile: readonly string[], depth = 0): unknown {
  if (typeof value === "string") return stableText(value, volatile);
  if (value === null || typeof value === "number" || typeof value === "boolean") return value;
  if (typeof value !== "object" || depth > 40) return undefined;
  if (Array.isArray(value)) return value.map((item) => plain(item, volatile, depth + 1) ?? null);
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) {
    const toJSON = (value as { toJSON?: () => unknown }).toJSON;
    return typeof toJSON === "function" ? plain(toJSON.call(value), volatile, depth + 1) : `[${(value as object).constructor?.name ?? "object"}]`;
  }
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const converted = plain(item, volatile, depth + 1);
    if (converted !== undefined) out[key] = converted;
  }
  return out;
}

export interface NormalisedRequest {
  model: string;
  messages: Array<{ type: string; name?: string; content: unknown; toolCalls?: Array<{ name: string; args: unknown }> }>;
  options: Record<string, unknown>;
}

/** The request as it is hashed and kept: the model, each message's kind, text and tool calls (no ids), and the options that shape the answer. */
export function normaliseRequest(model: string, messages: BaseMessage[], options: Record<string, unknown> | undefined, volatile: readonly string[]): NormalisedRequest {
  const kept: Record<string, unknown> = {};
  for (const key of ANSWER_OPTIONS) {
    const value = options?.[key];
    if (value !== undefined) kept[key] = plain(value, volatile);
  }
  return {
    model,
    messages: messages.map((message) => {
      const toolCalls = (message as { tool_calls?: Array<{ name: string; args: unknown }> }).tool_calls ?? [];
      return {
        type: message.getType(),
        ...(message.getType() === "tool" && message.name ? { name: message.name } : {}),
        content: plain(message.content, volatile),
        ...(toolCalls.length > 0 ? { toolCalls: toolCalls.map((call) => ({ name: call.name, args: plain(call.args, volatile) })) } : {}),
      };
    }),
    options: kept,
  };
}

/** The request's key: 16 hex digits of the SHA-256 of its normalised form. */
export function requestHash(request: NormalisedRequest): string {
  return createHash("sha256").update(stableStringify(request)).digest("hex").slice(0, 16);
}

/** The troupe role a request is for, by its system prompt. */
export function roleOfRequest(messages: BaseMessage[]): string | null {
  const system = messages.find((message) => message.getType() === "system");
  if (!system) return null;
  return roleOf(typeof system.content === "string" ? system.content : system.text) ?? null;
}

/** Every case's cassette in a folder, read and checked before a replay starts (a case without one maps to undefined). */
export async function readCassettes(directory: string, caseIds: readonly string[]): Promise<Map<string, CassetteFile | undefined>> {
  const cassettes = new Map<string, CassetteFile | undefined>();
  for (const id of caseIds) cassettes.set(id, await readCassette(cassettePath(directory, id)));
  return cassettes;
}
