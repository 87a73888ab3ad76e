import type { BaseMessage } from "@langchain/core/messages";
import { AIMessageChunk } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { parseConversation } from "../../core/conversation.js";
import { writeCompactPlan } from "../../core/plan-compact.js";
import { toPlanWire } from "../../core/plan-wire.js";
import { HANDLE_KEY, PLANNER_TOOLS_HEADING, parseSections, roleOf, SECTIONS, STRUCTURED_OUTPUT } from "../../core/prompt-protocol.js";
import { unspotlight, unspotlightDeep, untrustedBlocks } from "../../core/spotlight.js";
import { boundToolNames, type ToolCallingCallOptions, ToolCallingChatModel } from "../tool-calling-chat-model.js";
import { planTask } from "./planner-rules.js";
import { type OutcomeLine, reviewOutcomes } from "./review-rules.js";
import { synthesize } from "./synthesis-rules.js";
import { submissionText, type ToolReply, workerStep } from "./worker-rules.js";

function textOf(message: BaseMessage | undefined): string {
  if (!message) return "";
  return typeof message.content === "string" ? message.content : message.text;
}

function parseJson<T>(text: string | undefined, fallback: T): T {
  if (!text) return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/** The subtask message of a worker conversation and the tool replies that followed it. */
function workerConversation(messages: BaseMessage[]): { label: string; args: Record<string, unknown>; replies: ToolReply[] } {
  let subtaskIndex = -1;
  messages.forEach((message, index) => {
    if (message.getType() === "human" && parseSections(textOf(message)).has(SECTIONS.subtask)) subtaskIndex = index;
  });
  const source = subtaskIndex >= 0 ? messages[subtaskIndex] : [...messages].reverse().find((message) => message.getType() === "human");
  const sections = parseSections(textOf(source));
  const subtask = sections.get(SECTIONS.subtask);
  const label = subtask ? (/^\S+ \([^)]*\): ([\s\S]*)$/.exec(subtask)?.[1] ?? subtask) : textOf(source);
  const args = parseJson<Record<string, unknown>>(sections.get(SECTIONS.arguments), {});
  // Untrusted arguments are listed by handle and given as marked data below: the rules work on their values.
  const blocks = untrustedBlocks(sections.get(SECTIONS.untrusted) ?? "");
  for (const [name, shown] of Object.entries(args)) {
    const handle = shown as Record<string, unknown> | null;
    const text = typeof handle === "object" && handle !== null && typeof handle[HANDLE_KEY] === "string" ? blocks.get(handle[HANDLE_KEY]) : undefined;
    if (text === undefined || typeof handle?.bytes !== "number" || Buffer.byteLength(text, "utf8") !== handle.bytes) continue;
    args[name] = handle.shape === "string" ? text : parseJson<unknown>(text, text);
  }
  const replies: ToolReply[] = [];
  for (const message of messages.slice(subtaskIndex + 1)) {
    if (message.getType() !== "tool") continue;
    const content = unspotlight(textOf(message));
    const body = parseJson<Record<string, unknown>>(content, { ok: true, value: content });
    const tool = message.name ?? "tool";
    if (body.ok === false) {
      const error = (body.error ?? {}) as { code?: string; message?: string };
      replies.push({ tool, ok: false, error: { code: error.code ?? "error", message: error.message ?? "failed" } });
    } else {
      const reply: ToolReply = { tool, ok: true, value: body.value, summary: typeof body.summary === "string" ? body.summary : undefined };
      if (typeof body[HANDLE_KEY] === "string") reply.handle = body[HANDLE_KEY];
      replies.push(reply);
    }
  }
  return { label: label.trim(), args, replies };
}

/**
 * The tools a planner's system prompt lists ("  - name: description" under each agent, after its
 * catalogue heading), and the agent each is described under — the first that has it, who runs a
 * tool step the plan names no agent for; undefined when it lists none.
 */
function catalogueOf(system: string): { tools: string[]; agentFor: (tool: string) => string } | undefined {
  const start = system.indexOf(`\n${PLANNER_TOOLS_HEADING}\n`) + 1;
  if (start <= 0) return undefined;
  const owners = new Map<string, string>();
  let agent: string | undefined;
  let first: string | undefined;
  for (const line of system.slice(start).split("\n").slice(1)) {
    if (line.trim() === "") break;
    const tool = /^ {2}- ([A-Za-z][\w.-]*):/.exec(line)?.[1];
    if (tool) {
      owners.set(tool, agent ?? first ?? "execute");
      continue;
    }
    const named = /^- ([A-Za-z][\w.-]*):/.exec(line)?.[1];
    agent = named;
    first ??= named;
  }
  return { tools: [...owners.keys()], agentFor: (tool) => owners.get(tool) ?? first ?? "execute" };
}


let callCounter = 0;
function toolCallId(): string {
  callCounter += 1;
  return `offline_call_${callCounter}`;
}

/**
 * The `offline` provider: a deterministic, rule-based LangChain chat model. It needs no key and
 * no network, answers through tool calls exactly like a real model, and says when a task needs
 * a real one.
 */
export class OfflineChatModel extends ToolCallingChatModel {
  static override lc_name(): string {
    return "TroupeOfflineChatModel";
  }

  override _llmType(): string {
    return "troupe-offline";
  }

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const system = messages.find((message) => message.getType() === "system");
    const role = roleOf(textOf(system)) ?? "execute";
    const tools = boundToolNames(options);
    // The request is the last human message with sections (a repair note after it has none).
    const humans = messages.filter((message) => message.getType() === "human");
    const lastHuman = [...humans].reverse().find((message) => parseSections(textOf(message)).size > 0) ?? humans.at(-1);
    const sections = parseSections(textOf(lastHuman));
    let reply: AIMessageChunk;
    switch (role) {
      case "planner": {
        // The thread's earlier turns, for "it" and "that file"; the tools it may plan with, for the memory clauses; a person's feedback on an earlier plan.
        const catalogue = catalogueOf(textOf(system));
        const feedback = (sections.get(SECTIONS.feedback) ?? "").split("\n").map((line) => line.replace(/^-\s*/, "").trim()).filter(Boolean);
        const context = { history: parseConversation(sections.get(SECTIONS.conversation)), feedback, ...(catalogue ? { tools: catalogue.tools } : {}) };
        const plan = planTask(sections.get(SECTIONS.task) ?? textOf(lastHuman), context);
        // Without a catalogue to say who runs a tool step by default, every step names its agent.
        const agentFor = catalogue?.agentFor ?? (() => "");
        // It answers on the wire it is asked for: the plan function's JSON when that is bound or its prompt asks for it (a JSON-schema answer), the compact lines otherwise.
        const json = tools.includes(STRUCTURED_OUTPUT.plan) || textOf(system).includes(`by calling ${STRUCTURED_OUTPUT.plan}`);
        reply = json ? this.#structured(STRUCTURED_OUTPUT.plan, toPlanWire(plan, { agentFor }), tools) : new AIMessageChunk(writeCompactPlan(plan, { agentFor }));
        break;
      }
      case "critic": {
        const outcomes = unspotlightDeep(parseJson<OutcomeLine[]>(sections.get(SECTIONS.outcomes), []));
        reply = this.#structured(STRUCTURED_OUTPUT.review, reviewOutcomes(outcomes, sections.get(SECTIONS.task) ?? ""), tools);
        break;
      }
      case "synthesizer": {
        const outcomes = unspotlightDeep(parseJson<OutcomeLine[]>(sections.get(SECTIONS.outcomes), []));
        const issues = unspotlightDeep(parseJson<string[]>(sections.get(SECTIONS.review), []));
        reply = new AIMessageChunk(synthesize(sections.get(SECTIONS.task) ?? "", outcomes, issues));
        break;
      }
      default: {
        const { label, args, replies } = workerConversation(messages);
        const step = workerStep(label, args, replies, tools);
        const call = "toolCall" in step ? step.toolCall : { name: STRUCTURED_OUTPUT.result, args: step.submit as unknown as Record<string, unknown> };
        // Without the outcome tool (a model used outside a troupe worker), the outcome is said in words.
        reply =
          "toolCall" in step || tools.includes(STRUCTURED_OUTPUT.result)
            ? new AIMessageChunk({ content: "", tool_calls: [{ id: toolCallId(), name: call.name, args: call.args, type: "tool_call" }] })
            : new AIMessageChunk(submissionText(step.submit, replies));
      }
    }
    return { generations: [{ text: textOf(reply), message: reply }] };
  }

  #structured(name: string, value: unknown, tools: string[]): AIMessageChunk {
    if (tools.includes(name)) {
      return new AIMessageChunk({ content: "", tool_calls: [{ id: toolCallId(), name, args: value as Record<string, unknown>, type: "tool_call" }] });
    }
    return new AIMessageChunk(JSON.stringify(value));
  }
}
