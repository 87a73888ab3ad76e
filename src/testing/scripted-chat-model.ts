import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { BaseMessage } from "@langchain/core/messages";
import { AIMessageChunk } from "@langchain/core/messages";
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import { mapItemOf, roleOf, subtaskIdOf } from "../core/prompt-protocol.js";
import { type ToolCallingCallOptions, ToolCallingChatModel } from "../providers/tool-calling-chat-model.js";

const WORKER_ROLES_EXCLUDED = new Set(["planner", "critic", "synthesizer"]);

/** One scripted reply, and which call it answers. Plain JSON, so a script can live in a file. */
export interface ScriptStep {
  /** planner, critic, synthesizer, a worker's agent name, or `worker` for any worker. */
  role?: string;
  /** The subtask id of a worker call. */
  subtask?: string;
  /** The item (zero-based) of a worker call on one item of a mapped subtask. */
  item?: number;
  /** Text the last message must contain. */
  contains?: string;
  content?: string;
  toolCalls?: Array<{ name: string; args: Record<string, unknown>; id?: string }>;
  /** Throw this instead of answering. */
  error?: string;
  delayMs?: number;
  usage?: { input: number; output: number };
  /** How many calls this step answers (default 1). */
  times?: number;
  /**
   * When the caller streams: send each tool call's arguments in pieces of this many characters
   * (as providers stream a structured answer), `pieceDelayMs` apart. A text reply streams word by
   * word, `pieceDelayMs` apart when it is given.
   */
  streamPieces?: number;
  /** The time between streamed pieces: of a tool call's arguments (with `streamPieces`), or of a text answer's words. */
  pieceDelayMs?: number;
  /**
   * Reply only once the test opens this gate (`model.open(gate)`): "slow enough to catch mid-way"
   * as a state the test controls, not a delay that a busy machine can outrun or outlast.
   */
  gate?: string;
  /**
   * With `streamPieces`: the last piece waits until a call of this role (and subtask) has started
   * on this model, which the held call records (`releasedBy`). A gate on an order, not a clock:
   * "the worker started while the planner was still writing" holds however slow the machine is.
   */
  holdLastPieceFor?: CallMatch;
  /** Reply only once a call of this role (and subtask) has ended on this model: an order the test needs, held as one. */
  after?: CallMatch;
  /** Answer as cut off at the output limit (`finish_reason: "length"`), as a provider with no larger limit to offer does. */
  cutOff?: boolean;
}

/** Which call a step waits for: its role (and subtask). */
interface CallMatch {
  role: string;
  subtask?: string;
}

interface Waiter extends CallMatch {
  phase: "start" | "end";
  resolve: (call: ScriptedCall) => void;
}

function matches(call: ScriptedCall, match: CallMatch): boolean {
  return call.role === match.role && (match.subtask === undefined || call.subtask === match.subtask);
}

export interface ScriptedCall {
  index: number;
  step: number | undefined;
  role: string;
  subtask: string | undefined;
  /** The item of a mapped subtask the call works on (zero-based). */
  item: number | undefined;
  startedAt: number;
  endedAt?: number;
  /** Pieces of a streamed answer sent (words of a text reply, `streamPieces` of a structured one), and how many it had: fewer when the caller stopped reading. */
  piecesSent?: number;
  piecesTotal?: number;
  /** The index of the call whose start let this call's held last piece go (`holdLastPieceFor`). */
  releasedBy?: number;
  tools: string[];
  lastMessage: string;
}

export interface ScriptedChatModelOptions {
  steps: ScriptStep[];
  /** Appends a JSON line per call start and end, for tests that watch another process. */
  logFile?: string;
  /** Whether text replies stream word by word when a caller streams (default true, as providers do). */
  streaming?: boolean;
}

/** `promise`, or a rejection with the signal's reason once it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(signal.reason as Error);
    signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

function text(message: BaseMessage | undefined): string {
  if (!message) return "";
  return typeof message.content === "string" ? message.content : message.text;
}

/**
 * A chat model that answers from a script: each call takes the first unused step that matches
 * its role, subtask and text. It records every call, and an unexpected call fails the call and
 * is kept for `assertDone`, which also fails on steps left unused.
 */
export class ScriptedChatModel extends ToolCallingChatModel {
  readonly steps: ScriptStep[];
  readonly calls: ScriptedCall[] = [];
  readonly unexpected: ScriptedCall[] = [];
  readonly #used: number[];
  readonly #logFile: string | undefined;
  readonly #gates = new Map<string, { opened: Promise<void>; open: () => void }>();
  readonly #waiters = new Set<Waiter>();

  constructor(options: ScriptedChatModelOptions) {
    super({});
    this.steps = options.steps;
    this.#used = options.steps.map(() => 0);
    this.#logFile = options.logFile;
    // LangChain's own switch: `stream()` then yields the whole reply at once, and troupe does not stream it.
    if (options.streaming === false) this.disableStreaming = true;
  }

  static override lc_name(): string {
    return "TroupeScriptedChatModel";
  }

  override _llmType(): string {
    return "troupe-scripted";
  }

  /** Steps not yet used up. */
  remaining(): ScriptStep[] {
    return this.steps.filter((step, index) => (this.#used[index] ?? 0) < (step.times ?? 1));
  }

  /** Calls made for a role (and subtask). */
  callsFor(role: string, subtask?: string): ScriptedCall[] {
    return this.calls.filter((call) => call.role === role && (subtask === undefined || call.subtask === subtask));
  }

  /** Fails when a call was unexpected or a step was never used. */
  assertDone(): void {
    if (this.unexpected.length > 0) {
      const first = this.unexpected[0] as ScriptedCall;
      throw new Error(`unexpected model call (role ${first.role}, subtask ${first.subtask ?? "-"}): ${first.lastMessage.slice(0, 300)}`);
    }
    const left = this.remaining();
    if (left.length > 0) throw new Error(`${left.length} scripted step(s) were not used: ${JSON.stringify(left).slice(0, 500)}`);
  }

  /** Opens a gate (`ScriptStep.gate`): the calls waiting at it reply, and later ones do not wait. */
  open(gate: string): void {
    this.#gate(gate).open();
  }

  #gate(name: string): { opened: Promise<void>; open: () => void } {
    let gate = this.#gates.get(name);
    if (!gate) {
      let open = (): void => {};
      const opened = new Promise<void>((resolve) => (open = resolve));
      gate = { opened, open };
      this.#gates.set(name, gate);
    }
    return gate;
  }

  /** The first call of `role` (and `subtask`) once it has started, or once it has ended (`phase`). */
  #reached(match: CallMatch, phase: "start" | "end", signal: AbortSignal | undefined): Promise<ScriptedCall> {
    const found = this.calls.find((call) => matches(call, match) && (phase === "start" || call.endedAt !== undefined));
    if (found) return Promise.resolve(found);
    let waiter: Waiter | undefined;
    const reached = new Promise<ScriptedCall>((resolve) => {
      waiter = { ...match, phase, resolve };
      this.#waiters.add(waiter);
    });
    return abortable(reached, signal).finally(() => {
      if (waiter) this.#waiters.delete(waiter);
    });
  }

  #announce(call: ScriptedCall, phase: "start" | "end"): void {
    for (const waiter of this.#waiters) {
      if (waiter.phase !== phase || !matches(call, waiter)) continue;
      this.#waiters.delete(waiter);
      waiter.resolve(call);
    }
  }

  #log(entry: Record<string, unknown>): void {
    if (this.#logFile) appendFileSync(this.#logFile, `${JSON.stringify(entry)}\n`);
  }

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const system = text(messages.find((message) => message.getType() === "system"));
    const role = roleOf(system) ?? "unknown";
    const human = [...messages].reverse().find((message) => message.getType() === "human");
    const subtaskMessage = text(messages.find((message) => message.getType() === "human" && subtaskIdOf(text(message)) !== undefined) ?? human);
    const subtask = subtaskIdOf(subtaskMessage);
    const item = mapItemOf(subtaskMessage);
    const last = text(messages[messages.length - 1]);
    const index = this.steps.findIndex((step, position) => {
      if ((this.#used[position] ?? 0) >= (step.times ?? 1)) return false;
      if (step.role !== undefined && step.role !== role && !(step.role === "worker" && !WORKER_ROLES_EXCLUDED.has(role))) return false;
      if (step.subtask !== undefined && step.subtask !== subtask) return false;
      if (step.item !== undefined && step.item !== item) return false;
      if (step.contains !== undefined && !last.includes(step.contains)) return false;
      return true;
    });
    const call: ScriptedCall = {
      index: this.calls.length,
      step: index >= 0 ? index : undefined,
      role,
      subtask,
      item,
      startedAt: Date.now(),
      tools: (options.tools ?? []).map((tool) => tool.function.name),
      lastMessage: last,
    };
    this.calls.push(call);
    this.#announce(call, "start");
    this.#log({ phase: "start", index: call.index, step: call.step, role, subtask, item, pid: process.pid, at: call.startedAt });
    if (index < 0) {
      this.unexpected.push(call);
      throw new Error(`scripted model: no step for this call (role ${role}, subtask ${subtask ?? "-"})`);
    }
    this.#used[index] = (this.#used[index] ?? 0) + 1;
    const step = this.steps[index] as ScriptStep;
    if (step.delayMs) await sleep(step.delayMs, undefined, { signal: options.signal });
    if (step.gate !== undefined) await abortable(this.#gate(step.gate).opened, options.signal);
    if (step.after) await this.#reached(step.after, "end", options.signal);
    call.endedAt = Date.now();
    this.#announce(call, "end");
    this.#log({ phase: "end", index: call.index, step: index, role, subtask, item, pid: process.pid, at: call.endedAt });
    if (step.error !== undefined) throw new Error(step.error);
    const message = new AIMessageChunk({
      content: step.content ?? "",
      tool_calls: (step.toolCalls ?? []).map((toolCall, position) => ({
        id: toolCall.id ?? `scripted_${call.index}_${position}`,
        name: toolCall.name,
        args: toolCall.args,
        type: "tool_call" as const,
      })),
      usage_metadata: step.usage
        ? { input_tokens: step.usage.input, output_tokens: step.usage.output, total_tokens: step.usage.input + step.usage.output }
        : undefined,
      ...(step.cutOff ? { response_metadata: { finish_reason: "length" } } : {}),
    });
    return { generations: [{ text: step.content ?? "", message }], llmOutput: { scriptStep: index } };
  }

  /**
   * Streams a scripted text reply word by word, as provider models stream tokens (troupe streams
   * the synthesizer's answer); a reply with tool calls comes as one chunk. The last chunk carries
   * the finish reason and the usage, as a provider's does, so the stream reads as complete.
   */
  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: ToolCallingCallOptions,
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const { generations, llmOutput } = await this._generate(messages, options);
    const message = generations[0]?.message as AIMessageChunk;
    const text = typeof message.content === "string" ? message.content : "";
    const step = this.steps[(llmOutput as { scriptStep?: number } | undefined)?.scriptStep ?? -1];
    const finish = { response_metadata: { finish_reason: step?.cutOff ? "length" : (message.tool_calls ?? []).length > 0 ? "tool_calls" : "stop" } };
    if ((message.tool_calls ?? []).length > 0 && step?.streamPieces) {
      yield* this.#streamToolCalls(message, step, finish, options, runManager, this.calls.at(-1));
      return;
    }
    if ((message.tool_calls ?? []).length > 0 || text === "") {
      yield new ChatGenerationChunk({ text, message: new AIMessageChunk({ content: text, tool_call_chunks: message.tool_call_chunks ?? [], tool_calls: message.tool_calls ?? [], usage_metadata: message.usage_metadata, ...finish }) });
      return;
    }
    const pieces = text.match(/\s*\S+\s*$|\s*\S+/g) ?? [text];
    const record = this.calls.at(-1);
    if (record) {
      record.piecesSent = 0;
      record.piecesTotal = pieces.length;
    }
    for (const [index, piece] of pieces.entries()) {
      const last = index === pieces.length - 1;
      if (step?.pieceDelayMs && index > 0) await sleep(step.pieceDelayMs, undefined, { signal: options.signal });
      if (record) record.piecesSent = (record.piecesSent ?? 0) + 1;
      const chunk = new ChatGenerationChunk({
        text: piece,
        message: new AIMessageChunk({ content: piece, ...(last ? { ...finish, ...(message.usage_metadata ? { usage_metadata: message.usage_metadata } : {}) } : {}) }),
      });
      yield chunk;
      await runManager?.handleLLMNewToken(piece, undefined, undefined, undefined, undefined, { chunk });
    }
  }

  /** A reply's tool calls as providers stream them: each call's arguments (JSON) in pieces, the last chunk with the finish reason and usage. */
  async *#streamToolCalls(
    message: AIMessageChunk,
    step: ScriptStep,
    finish: { response_metadata: Record<string, unknown> },
    options: ToolCallingCallOptions,
    runManager?: CallbackManagerForLLMRun,
    record?: ScriptedCall,
  ): AsyncGenerator<ChatGenerationChunk> {
    const calls = message.tool_calls ?? [];
    const size = step.streamPieces ?? 1;
    const delayMs = step.pieceDelayMs ?? 0;
    if (record) {
      record.piecesSent = 0;
      record.piecesTotal = calls.reduce((total, call) => total + Math.ceil(JSON.stringify(call.args).length / size), 0);
    }
    for (const [index, call] of calls.entries()) {
      const text = JSON.stringify(call.args);
      for (let offset = 0; offset < text.length; offset += size) {
        if (delayMs > 0) await sleep(delayMs, undefined, { signal: options.signal });
        const first = offset === 0;
        const last = index === calls.length - 1 && offset + size >= text.length;
        if (last && step.holdLastPieceFor) {
          const releasing = await this.#reached(step.holdLastPieceFor, "start", options.signal);
          if (record) record.releasedBy = releasing.index;
        }
        const piece = new AIMessageChunk({
          content: "",
          tool_call_chunks: [{ index, type: "tool_call_chunk", args: text.slice(offset, offset + size), ...(first ? { id: call.id, name: call.name } : {}) }],
          ...(last ? { ...finish, ...(message.usage_metadata ? { usage_metadata: message.usage_metadata } : {}) } : {}),
        });
        const chunk = new ChatGenerationChunk({ text: "", message: piece });
        if (record) record.piecesSent = (record.piecesSent ?? 0) + 1;
        yield chunk;
        await runManager?.handleLLMNewToken("", undefined, undefined, undefined, undefined, { chunk });
      }
    }
  }
}
