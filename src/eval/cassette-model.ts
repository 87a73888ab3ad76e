import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import { ChatGenerationChunk, type ChatResult } from "@langchain/core/outputs";
import { errorMessage } from "../core/errors.js";
import { MODEL_ROLES, type ModelRole } from "../providers/provider.js";
import { choiceId, type ModelCandidate, type ModelSet } from "../providers/registry.js";
import { type CassetteEntry, type CassetteFile, normaliseRequest, type RecordedMessage, type RecordedReply, requestHash, roleOfRequest } from "./cassette.js";

/** A request a replay found no recorded reply for. */
export interface ReplayMiss {
  hash: string;
  model: string;
  role: string | null;
}

/** Thrown by a replaying model for a request the cassette does not hold (not retried: it would miss again). */
export class ReplayMissError extends Error {
  constructor(
    readonly miss: ReplayMiss,
    file: string,
  ) {
    super(`no recorded reply for request ${miss.hash} (${miss.role ?? "model"}, ${miss.model}) in ${file}`);
    this.name = "ReplayMissError";
  }
}

/** A call that failed while the cassette was recorded, failed again on replay so the run takes the same turn (a fallback). */
export class RecordedFailureError extends Error {
  constructor(message: string) {
    super(`failed when recorded: ${message}`);
    this.name = "RecordedFailureError";
  }
}

/**
 * One case's cassette while its run goes: in `record` mode it collects every request and reply;
 * in `replay` mode it answers from a recorded file, in the recorded order when the same request
 * was made several times (and with the last reply once those run out), and remembers misses.
 */
export class CaseCassette {
  readonly entries: CassetteEntry[] = [];
  readonly misses: ReplayMiss[] = [];
  readonly #replies = new Map<string, CassetteEntry[]>();
  readonly #failures = new Map<string, string>();
  readonly #cursor = new Map<string, number>();

  constructor(
    readonly mode: "record" | "replay",
    readonly file: string,
    /** The case's own folders: replaced in requests, since another run of the case has others. */
    readonly volatile: readonly string[],
    recorded?: CassetteFile,
  ) {
    for (const entry of recorded?.entries ?? []) {
      if (entry.reply) {
        const list = this.#replies.get(entry.hash) ?? [];
        list.push(entry);
        this.#replies.set(entry.hash, list);
      } else if (entry.failure !== undefined) this.#failures.set(entry.hash, entry.failure);
    }
  }

  /** The recorded reply to a request; throws a ReplayMissError (and remembers it) when there is none. */
  replay(hash: string, model: string, role: string | null): RecordedReply {
    const replies = this.#replies.get(hash);
    if (!replies || replies.length === 0) {
      const failure = this.#failures.get(hash);
      if (failure !== undefined) throw new RecordedFailureError(failure);
      const miss = { hash, model, role };
      this.misses.push(miss);
      throw new ReplayMissError(miss, this.file);
    }
    const index = this.#cursor.get(hash) ?? 0;
    this.#cursor.set(hash, index + 1);
    return (replies[Math.min(index, replies.length - 1)] as CassetteEntry).reply as RecordedReply;
  }

  record(entry: CassetteEntry): void {
    this.entries.push(entry);
  }
}

function recordedMessage(message: BaseMessage): RecordedMessage {
  const ai = message as AIMessage;
  return {
    content: ai.content,
    ...(ai.tool_calls && ai.tool_calls.length > 0 ? { tool_calls: ai.tool_calls.map((call) => ({ ...(call.id ? { id: call.id } : {}), name: call.name, args: call.args })) } : {}),
    ...(ai.invalid_tool_calls && ai.invalid_tool_calls.length > 0 ? { invalid_tool_calls: ai.invalid_tool_calls as Array<Record<string, unknown>> } : {}),
    additional_kwargs: ai.additional_kwargs,
    response_metadata: ai.response_metadata,
    ...(ai.usage_metadata ? { usage_metadata: { ...ai.usage_metadata } } : {}),
    ...(ai.id ? { id: ai.id } : {}),
    ...(ai.name ? { name: ai.name } : {}),
  };
}

function recordedReply(result: ChatResult): RecordedReply {
  return {
    generations: result.generations.map((generation) => ({
      text: generation.text,
      message: recordedMessage(generation.message),
      ...(generation.generationInfo ? { generationInfo: generation.generationInfo } : {}),
    })),
    ...(result.llmOutput ? { llmOutput: result.llmOutput } : {}),
  };
}

function messageFields(recorded: RecordedMessage) {
  return {
    content: recorded.content as AIMessage["content"],
    tool_calls: (recorded.tool_calls ?? []).map((call) => ({ ...call, type: "tool_call" as const })),
    ...(recorded.invalid_tool_calls ? { invalid_tool_calls: recorded.invalid_tool_calls as AIMessage["invalid_tool_calls"] } : {}),
    additional_kwargs: recorded.additional_kwargs ?? {},
    response_metadata: recorded.response_metadata ?? {},
    ...(recorded.usage_metadata ? { usage_metadata: recorded.usage_metadata as AIMessage["usage_metadata"] } : {}),
    ...(recorded.id ? { id: recorded.id } : {}),
    ...(recorded.name ? { name: recorded.name } : {}),
  };
}

function chatResultOf(reply: RecordedReply): ChatResult {
  return {
    generations: reply.generations.map((generation) => ({ text: generation.text, message: new AIMessage(messageFields(generation.message)), ...(generation.generationInfo ? { generationInfo: generation.generationInfo } : {}) })),
    ...(reply.llmOutput ? { llmOutput: reply.llmOutput } : {}),
  };
}

function chunkOf(reply: RecordedReply): ChatGenerationChunk {
  const generation = reply.generations[0] as RecordedReply["generations"][number];
  const fields = messageFields(generation.message);
  const message = new AIMessageChunk({
    ...fields,
    tool_call_chunks: fields.tool_calls.map((call, index) => ({ type: "tool_call_chunk" as const, name: call.name, args: JSON.stringify(call.args), id: call.id, index })),
  });
  return new ChatGenerationChunk({ text: generation.text, message, ...(generation.generationInfo ? { generationInfo: generation.generationInfo } : {}) });
}

function streams(model: BaseChatModel): boolean {
  return model._streamResponseChunks !== BaseChatModel.prototype._streamResponseChunks;
}

/**
 * The model, recording to or replaying from a case's cassette. It is made with
 * `Object.create(inner)` — an instance of the provider's own class whose `_generate` and
 * `_streamResponseChunks` are replaced — because the provider's `bindTools` and
 * `withStructuredOutput` build their call options and answer parsers around `this`: bound to
 * this object, every provider's tools, JSON-schema formats and parsers work unchanged on
 * recorded replies. A wrapper class would have to re-implement each provider's structured output.
 * Every request reaches one of the two replaced methods: `withConfig` (which `bindTools` and
 * `withStructuredOutput` go through) wraps a new instance when the provider makes one, and
 * native event streams are bridged through the replaced chunk stream.
 */
export function cassetteModel(inner: BaseChatModel, model: string, cassette: CaseCassette): BaseChatModel {
  const wrapper = Object.create(inner) as BaseChatModel;
  const prepare = (messages: BaseMessage[], options: unknown) => {
    const request = normaliseRequest(model, messages, options as Record<string, unknown> | undefined, cassette.volatile);
    return { request, hash: requestHash(request), role: roleOfRequest(messages) };
  };
  const aborted = (options: unknown): boolean => Boolean((options as { signal?: AbortSignal } | undefined)?.signal?.aborted);
  wrapper._generate = async (messages: BaseMessage[], options: typeof inner.ParsedCallOptions, runManager?: CallbackManagerForLLMRun): Promise<ChatResult> => {
    const { request, hash, role } = prepare(messages, options);
    if (cassette.mode === "replay") return chatResultOf(cassette.replay(hash, model, role));
    try {
      const result = await inner._generate(messages, options, runManager);
      cassette.record({ hash, model, role, request, reply: recordedReply(result) });
      return result;
    } catch (error) {
      if (!aborted(options)) cassette.record({ hash, model, role, request, failure: errorMessage(error).split("\n")[0] ?? "failed" });
      throw error;
    }
  };
  if (streams(inner)) {
    wrapper._streamResponseChunks = async function* (messages: BaseMessage[], options: typeof inner.ParsedCallOptions, runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
      const { request, hash, role } = prepare(messages, options);
      if (cassette.mode === "replay") {
        const chunk = chunkOf(cassette.replay(hash, model, role));
        await runManager?.handleLLMNewToken(chunk.text, undefined, undefined, undefined, undefined, { chunk });
        yield chunk;
        return;
      }
      let full: ChatGenerationChunk | undefined;
      try {
        for await (const chunk of inner._streamResponseChunks(messages, options, runManager)) {
          full = full ? full.concat(chunk) : chunk;
          yield chunk;
        }
      } catch (error) {
        if (!aborted(options)) cassette.record({ hash, model, role, request, failure: errorMessage(error).split("\n")[0] ?? "failed" });
        throw error;
      }
      if (full) cassette.record({ hash, model, role, request, reply: { generations: [{ text: full.text, message: recordedMessage(full.message), ...(full.generationInfo ? { generationInfo: full.generationInfo } : {}) }] } });
    };
    // A provider's native event stream (ChatOpenAI's) talks to its client directly; LangChain's own bridges the chunks above.
    wrapper._streamChatModelEvents = BaseChatModel.prototype._streamChatModelEvents;
  }
  const withConfig = inner.withConfig;
  wrapper.withConfig = function (this: BaseChatModel, config) {
    const made = withConfig.call(this, config);
    // Some providers answer withConfig with a new instance of themselves holding the options as defaults (ChatOpenAI): it records and replays too.
    return made instanceof BaseChatModel && made !== this ? cassetteModel(made, model, cassette) : made;
  } as BaseChatModel["withConfig"];
  return wrapper;
}

/**
 * A model set whose every model (each role's chain, fallbacks included) records to or replays
 * from the case's cassette, under its `provider:model`. A model shared by several roles is
 * wrapped once.
 */
export function cassetteModelSet(models: ModelSet, cassette: CaseCassette): ModelSet {
  const wrapped = new Map<BaseChatModel, BaseChatModel>();
  const wrap = (model: BaseChatModel, id: string): BaseChatModel => {
    let made = wrapped.get(model);
    if (!made) {
      made = cassetteModel(model, id, cassette);
      wrapped.set(model, made);
    }
    return made;
  };
  const roles = Object.fromEntries(MODEL_ROLES.map((role) => [role, wrap(models[role], choiceId(models.choice[role]))])) as Record<ModelRole, BaseChatModel>;
  const set: ModelSet = { ...roles, choice: models.choice, ...(models.policy ? { policy: models.policy } : {}) };
  if (models.chains) {
    set.chains = Object.fromEntries(
      MODEL_ROLES.map((role) => [role, (models.chains as Record<ModelRole, ModelCandidate[]>)[role].map((candidate) => ({ ...candidate, model: wrap(candidate.model, choiceId(candidate.choice)) }))]),
    ) as Record<ModelRole, ModelCandidate[]>;
  }
  return set;
}
