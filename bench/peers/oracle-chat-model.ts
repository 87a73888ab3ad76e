import { AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { roleOf } from "../../src/core/prompt-protocol.js";
import { type ToolCallingCallOptions, ToolCallingChatModel } from "../../src/providers/tool-calling-chat-model.js";
import { callsToMake, handoffNote, nextRole, report, roleOfTools } from "./coordination.js";
import type { CountedMessage, Meter } from "./meter.js";
import type { PlanStyle } from "./plan-writer.js";
import { type Observation, parseResult, progressOf, reportedObservations } from "./solution.js";
import { taskOfText } from "./tasks.js";
import { criticReply, type OracleReply, plannerReply, synthesizerReply, workerReply } from "./troupe-face.js";
import { WORLD_TOOLS } from "./world.js";

/**
 * The oracle behind LangChain's chat-model interface (`bindTools` and tool calls), for troupe,
 * LangGraph's supervisor and the single ReAct agent. Each call it reads what it was sent — a
 * troupe role's prompt, or a conversation with the tools bound for it — decides as coordination.ts
 * and troupe-face.ts say, and records the call's tokens on the meter.
 */

const WORLD = new Set(WORLD_TOOLS.map((tool) => tool.name));
const HANDOFF = /^transfer_to_(.+)$/;

function textOf(message: BaseMessage): string {
  return typeof message.content === "string" ? message.content : message.text;
}

/** Tool calls with their results, and results reported in words, in a LangChain conversation. */
export function conversationObservations(messages: readonly BaseMessage[]): Observation[] {
  const calls = new Map<string, { name: string; args: Record<string, unknown> }>();
  const observations: Observation[] = [];
  for (const message of messages) {
    const type = message.getType();
    if (type === "ai") {
      for (const call of (message as { tool_calls?: Array<{ id?: string; name: string; args: Record<string, unknown> }> }).tool_calls ?? []) {
        if (call.id) calls.set(call.id, call);
      }
      observations.push(...reportedObservations(textOf(message)));
    } else if (type === "tool") {
      const call = calls.get((message as { tool_call_id?: string }).tool_call_id ?? "");
      if (call && WORLD.has(call.name)) observations.push({ tool: call.name, args: call.args, result: parseResult(textOf(message)) });
    }
  }
  return observations;
}

export interface OracleChatModelOptions {
  meter: Meter;
  planStyle?: PlanStyle;
}

let callCounter = 0;

export class OracleChatModel extends ToolCallingChatModel {
  readonly #meter: Meter;
  readonly #planStyle: PlanStyle;

  constructor(options: OracleChatModelOptions) {
    super({});
    this.#meter = options.meter;
    this.#planStyle = options.planStyle ?? "workers";
  }

  static override lc_name(): string {
    return "PeersOracleChatModel";
  }

  override _llmType(): string {
    return "peers-oracle";
  }

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const tools = options.tools ?? [];
    const system = messages.find((message) => message.getType() === "system");
    const troupeRole = system ? roleOf(textOf(system)) : undefined;
    let role: string;
    let reply: OracleReply;
    if (troupeRole === "planner") [role, reply] = ["planner", plannerReply(messages, tools, this.#planStyle)];
    else if (troupeRole === "critic") [role, reply] = ["critic", criticReply(messages, tools)];
    else if (troupeRole === "synthesizer") [role, reply] = ["synthesizer", synthesizerReply(messages)];
    else if (troupeRole !== undefined) [role, reply] = ["worker", workerReply(messages)];
    else [role, reply] = this.#conversationReply(messages, options);
    const toolCalls = reply.toolCalls.map((call) => {
      callCounter += 1;
      return { name: call.name, args: call.args, id: `oracle_${callCounter}`, type: "tool_call" as const };
    });
    const message = new AIMessageChunk({ content: reply.text, tool_calls: toolCalls });
    await this.#meter.record(
      role,
      { messages: messages.map((sent): CountedMessage => ({ text: typeof sent.content === "string" ? sent.content : JSON.stringify(sent.content), toolCalls: (sent as { tool_calls?: CountedMessage["toolCalls"] }).tool_calls })), tools: tools as never },
      { text: reply.text, toolCalls },
    );
    return { generations: [{ text: reply.text, message }] };
  }

  /** A supervisor (its tools hand off), a worker of one role, or a single agent with every tool. */
  #conversationReply(messages: readonly BaseMessage[], options: ToolCallingCallOptions): [string, OracleReply] {
    const names = (options.tools ?? []).map((tool) => tool.function.name);
    const human = messages.find((message) => message.getType() === "human");
    const task = taskOfText(human ? textOf(human) : "");
    if (!task) throw new Error("the oracle does not know this task");
    const progress = progressOf(task, conversationObservations(messages));
    const parallel = (options as { parallel_tool_calls?: boolean }).parallel_tool_calls !== false;
    const handoffs = names.filter((name) => HANDOFF.test(name));
    if (handoffs.length > 0) {
      const role = nextRole(progress);
      // One handoff a turn: control passes to that agent (the library binds parallel_tool_calls: false where a provider takes it).
      if (role && handoffs.includes(`transfer_to_${role}`)) return ["supervisor", { text: handoffNote(progress, role), toolCalls: [{ name: `transfer_to_${role}`, args: {} }] }];
      return ["supervisor", { text: task.answer(progress.results), toolCalls: [] }];
    }
    const role = roleOfTools(names);
    if (role === "none") throw new Error(`the oracle was given no tool of the world (${names.join(", ")})`);
    const calls = callsToMake(progress, role, parallel);
    if (calls.length > 0) return [role === undefined ? "agent" : "worker", { text: "", toolCalls: calls.map((call) => ({ name: call.tool, args: call.args })) }];
    if (role === undefined) return ["agent", { text: task.answer(progress.results), toolCalls: [] }];
    // A worker under a supervisor reports what it got since it was handed the work.
    const handedAt = messages.findLastIndex((message) => message.getType() === "tool" && HANDOFF.test((message as { name?: string }).name ?? ""));
    return ["worker", { text: report(conversationObservations(messages.slice(handedAt + 1))), toolCalls: [] }];
  }
}
