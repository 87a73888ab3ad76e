import { AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import { roleOf } from "../../src/core/prompt-protocol.js";
import { type ToolCallingCallOptions, ToolCallingChatModel } from "../../src/providers/tool-calling-chat-model.js";
import { callsToMake, handoffNote, nextRole, report, roleOfTools } from "./coordination.js";
import { type CountedMessage, type CountedTool, type Meter, sleep } from "./meter.js";
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
/** Characters of tool-call arguments per streamed piece (a few tokens, as providers send them). */
const STREAM_PIECE_CHARS = 16;

type ToolCall = { name: string; args: Record<string, unknown>; id: string; type: "tool_call" };

/** What a call sent, as the meter counts it: the messages and the tool definitions bound. */
function sentOf(messages: readonly BaseMessage[], options: ToolCallingCallOptions): { messages: CountedMessage[]; tools: CountedTool[] } {
  return {
    messages: messages.map((sent) => ({ text: typeof sent.content === "string" ? sent.content : JSON.stringify(sent.content), toolCalls: (sent as { tool_calls?: CountedMessage["toolCalls"] }).tool_calls })),
    tools: (options.tools ?? []) as CountedTool[],
  };
}

export class OracleChatModel extends ToolCallingChatModel {
  readonly #meter: Meter;
  readonly #planStyle: PlanStyle;

  constructor(options: OracleChatModelOptions) {
    super({});
    this.#meter = options.meter;
    this.#planStyle = options.planStyle ?? "offered";
  }

  static override lc_name(): string {
    return "PeersOracleChatModel";
  }

  override _llmType(): string {
    return "peers-oracle";
  }

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const { role, reply, toolCalls } = this.#decide(messages, options);
    await this.#meter.record(role, sentOf(messages, options), { text: reply.text, toolCalls });
    const message = new AIMessageChunk({ content: reply.text, tool_calls: toolCalls });
    return { generations: [{ text: reply.text, message }] };
  }

  /**
   * The same answer streamed as providers stream it (text in words, tool-call arguments in
   * pieces), each piece after its share of the answer's time: troupe's planner starts subtasks
   * from a plan still being written, as it would on a provider.
   */
  override async *_streamResponseChunks(messages: BaseMessage[], options: ToolCallingCallOptions, runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    const { role, reply, toolCalls } = this.#decide(messages, options);
    const { firstMs, outputMs } = await this.#meter.note(role, sentOf(messages, options), { text: reply.text, toolCalls });
    await sleep(firstMs);
    const finish = { response_metadata: { finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop" } };
    const pieces: Array<{ text: string; chunk: () => AIMessageChunk }> = [];
    for (const piece of reply.text.match(/\s*\S+\s*/g) ?? []) pieces.push({ text: piece, chunk: () => new AIMessageChunk({ content: piece }) });
    toolCalls.forEach((call, index) => {
      const json = JSON.stringify(call.args);
      for (let offset = 0; offset < json.length; offset += STREAM_PIECE_CHARS) {
        const args = json.slice(offset, offset + STREAM_PIECE_CHARS);
        const first = offset === 0;
        pieces.push({ text: args, chunk: () => new AIMessageChunk({ content: "", tool_call_chunks: [{ index, type: "tool_call_chunk", args, ...(first ? { id: call.id, name: call.name } : {}) }] }) });
      }
    });
    const characters = Math.max(1, pieces.reduce((sum, piece) => sum + piece.text.length, 0));
    // Each piece is due at its share of the answer's time from the first token: timers that fire late do not add up.
    const started = performance.now();
    let written = 0;
    for (const piece of pieces) {
      written += piece.text.length;
      await sleep(started + (outputMs * written) / characters - performance.now());
      const message = piece.chunk();
      const chunk = new ChatGenerationChunk({ text: typeof message.content === "string" ? message.content : "", message });
      yield chunk;
      await runManager?.handleLLMNewToken(chunk.text, undefined, undefined, undefined, undefined, { chunk });
    }
    yield new ChatGenerationChunk({ text: "", message: new AIMessageChunk({ content: "", ...finish }) });
  }

  #decide(messages: BaseMessage[], options: ToolCallingCallOptions): { role: string; reply: OracleReply; toolCalls: ToolCall[] } {
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
    return { role, reply, toolCalls };
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
