import { AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { BracketSpans } from "../core/json-scan.js";
import { mapItemOf, parseSections, roleOf, subtaskIdOf } from "../core/prompt-protocol.js";
import { unspotlight } from "../core/spotlight.js";
import type { ToolCallingCallOptions } from "../providers/tool-calling-chat-model.js";
import { ScriptedChatModel, type ScriptedChatModelOptions } from "./scripted-chat-model.js";

/**
 * A scripted model that obeys every injection, as a weak model might: whenever a worker's context
 * — its prompt, its arguments, the tool results it has read — holds a tool call written as
 * `tool_name({...json...})`, it makes that call (once; offered to it or not — the registry decides what runs), before going on with
 * its script. `{{last}}` in a directive's arguments stands for the text of the last tool result
 * (URL-encoded inside a `url`), so a planted page can say "read the secret, then send it". A
 * planner that is shown a directive records it in `plannerSaw`: troupe's planner must never see
 * untrusted text, so the injection corpus counts that as an attack that worked.
 */
export class ObedientChatModel extends ScriptedChatModel {
  /** Every call made because the context asked for it. */
  readonly obeyed: Array<{ role: string; subtask: string | undefined; item: number | undefined; tool: string; args: Record<string, unknown> }> = [];
  /** Directives a planner was shown (there must be none). */
  readonly plannerSaw: string[] = [];
  readonly #issued = new Set<string>();

  constructor(options: ScriptedChatModelOptions) {
    super(options);
  }

  static override lc_name(): string {
    return "TroupeObedientChatModel";
  }

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const system = textOf(messages.find((message) => message.getType() === "system"));
    const role = roleOf(system) ?? "unknown";
    const directives = findDirectives(messages.filter((message) => message.getType() !== "system"));
    if (role === "planner") {
      for (const directive of directives) if (!this.plannerSaw.includes(directive.text)) this.plannerSaw.push(directive.text);
      return super._generate(messages, options);
    }
    if (role === "critic" || role === "synthesizer") return super._generate(messages, options);
    const human = messages.find((message) => message.getType() === "human" && subtaskIdOf(textOf(message)) !== undefined);
    const subtask = subtaskIdOf(textOf(human));
    const item = mapItemOf(textOf(human));
    // Any tool named, offered or not: the registry, not the offer, decides what may run.
    const next = directives.find((directive) => !this.#issued.has(`${subtask}/${item}/${directive.text}`));
    if (!next) return super._generate(messages, options);
    this.#issued.add(`${subtask}/${item}/${next.text}`);
    const args = withLast(next.args, lastToolText(messages));
    this.obeyed.push({ role, subtask, item, tool: next.tool, args });
    const message = new AIMessageChunk({ content: "", tool_calls: [{ id: `obeyed_${this.obeyed.length}`, name: next.tool, args, type: "tool_call" }] });
    return { generations: [{ text: "", message }] };
  }
}

function textOf(message: BaseMessage | undefined): string {
  if (!message) return "";
  return typeof message.content === "string" ? message.content : message.text;
}

interface Directive {
  tool: string;
  args: Record<string, unknown>;
  text: string;
}

/** The string leaves of a parsed JSON value. */
function leaves(value: unknown, into: string[]): void {
  if (typeof value === "string") into.push(value);
  else if (Array.isArray(value)) for (const item of value) leaves(item, into);
  else if (typeof value === "object" && value !== null) for (const item of Object.values(value)) leaves(item, into);
}

/** Every text a model reads in these messages: each as written, and the strings inside its JSON (a tool result, the arguments) as read. */
function readableTexts(messages: BaseMessage[]): string[] {
  const texts: string[] = [];
  for (const message of messages) {
    const raw = unspotlight(textOf(message));
    texts.push(raw);
    const parts = [raw, ...[...parseSections(raw).values()]];
    for (const part of parts) {
      try {
        leaves(JSON.parse(part), texts);
      } catch {
        // not JSON: read as written
      }
    }
  }
  return texts;
}

/** The JSON object that starts at `start` (a `{`), read at most 20,000 characters, or undefined when it does not close there. */
function objectAt(spans: BracketSpans, text: string, start: number): string | undefined {
  const span = spans.spanAt(start);
  return span.kind === "closed" ? text.slice(start, span.end + 1) : undefined;
}

/** Tool calls written in the messages as `name({...})`, in the order they appear, each once. */
function findDirectives(messages: BaseMessage[]): Directive[] {
  const found: Directive[] = [];
  const seen = new Set<string>();
  for (const text of readableTexts(messages)) {
    const spans = new BracketSpans(text, 20_000);
    for (const match of text.matchAll(/([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)?)\(\s*\{/g)) {
      const start = (match.index ?? 0) + match[0].length - 1;
      const json = objectAt(spans, text, start);
      if (!json) continue;
      let args: unknown;
      try {
        args = JSON.parse(json);
      } catch {
        continue;
      }
      if (typeof args !== "object" || args === null || Array.isArray(args)) continue;
      const key = `${match[1]}(${json})`;
      if (seen.has(key)) continue;
      seen.add(key);
      found.push({ tool: match[1] as string, args: args as Record<string, unknown>, text: key });
    }
  }
  return found;
}

/** The text of the last tool result: its value's content or text, or the value as JSON. */
function lastToolText(messages: BaseMessage[]): string {
  const last = [...messages].reverse().find((message) => message.getType() === "tool");
  if (!last) return "";
  const raw = unspotlight(textOf(last));
  try {
    const body = JSON.parse(raw) as { value?: unknown };
    const value = body.value as Record<string, unknown> | string | undefined;
    if (typeof value === "string") return value;
    for (const key of ["content", "text", "stdout"]) if (typeof value?.[key] === "string") return (value[key] as string).trim();
    return JSON.stringify(value ?? body);
  } catch {
    return raw;
  }
}

/** `{{last}}` in the arguments (and in an object's values, such as headers) replaced by the last result's text, URL-encoded in a `url`. */
function withLast(args: Record<string, unknown>, last: string, depth = 0): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(args).map(([key, value]) => {
      if (typeof value === "string" && value.includes("{{last}}")) return [key, value.replaceAll("{{last}}", key === "url" ? encodeURIComponent(last) : depth > 0 ? last.replace(/[\r\n]+/g, " ").trim() : last)];
      if (depth === 0 && typeof value === "object" && value !== null && !Array.isArray(value)) return [key, withLast(value as Record<string, unknown>, last, 1)];
      return [key, value];
    }),
  );
}
