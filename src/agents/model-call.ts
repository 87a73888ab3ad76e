import { BaseCallbackHandler, type HandleLLMNewTokenCallbackFields, type NewTokenIndices } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { AsyncLocalStorageProviderSingleton } from "@langchain/core/singletons";
import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import { type AIMessage, AIMessageChunk, type BaseMessage } from "@langchain/core/messages";
import type { Runnable } from "@langchain/core/runnables";
import { isBudgetExhausted } from "../core/budget.js";
import { errorMessage, ModelError } from "../core/errors.js";
import { type AttemptResult, describeAttempts, type FailedAttempt, retry } from "../core/retry.js";
import { truncate } from "../core/text.js";
import type { ModelIncident } from "../core/model-incident.js";
import { modelCallMetadata } from "../providers/call-metadata.js";
import { isCutOff, refusalOf, withCacheBreakpoint } from "../providers/answer-shape.js";
import { classifyFailure, isContextOverflow, TruncatedStreamError } from "../providers/call-policy.js";
import { costOf } from "../providers/prices.js";
import { choiceId, type ModelCandidate, type ModelRoute } from "../providers/registry.js";
import { countMessageTokens } from "../providers/token-count.js";
import type { Reservation, RunLedger } from "./run-ledger.js";

export interface ModelUsage {
  llmCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Of the prompt tokens, those the provider served from its prompt cache. */
  cachedPromptTokens?: number;
  /** Of the prompt tokens, those written to the provider's cache (Anthropic charges for them). */
  cacheWriteTokens?: number;
  /** Of the completion tokens, those a reasoning model thought with. */
  reasoningTokens?: number;
}

/** The usage kept per call beside the four every call has. */
const DETAIL_KEYS = ["cachedPromptTokens", "cacheWriteTokens", "reasoningTokens"] as const;

/** Adds up the model calls of one node, and what went wrong on the way (retries, fallbacks). */
export class UsageMeter {
  readonly usage: Required<ModelUsage> = { llmCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, cachedPromptTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 };
  readonly incidents: ModelIncident[] = [];
  readonly #onIncident: ((incident: ModelIncident) => void) | undefined;

  /** `onIncident` hears of each retry and fallback as it happens (the node emits it as an event). */
  constructor(onIncident?: (incident: ModelIncident) => void) {
    this.#onIncident = onIncident;
  }

  add(usage: Partial<ModelUsage>): void {
    this.usage.llmCalls += usage.llmCalls ?? 0;
    this.usage.promptTokens += usage.promptTokens ?? 0;
    this.usage.completionTokens += usage.completionTokens ?? 0;
    this.usage.costUsd += usage.costUsd ?? 0;
    for (const key of DETAIL_KEYS) this.usage[key] += usage[key] ?? 0;
  }

  note(incident: ModelIncident): void {
    this.incidents.push(incident);
    this.#onIncident?.(incident);
  }
}

export type ChatRunnable = Runnable<BaseLanguageModelInput, AIMessageChunk>;

export interface CallOptions {
  signal?: AbortSignal;
  meter: UsageMeter;
  /** The run's budget and fallback memory; without one, calls are unlimited. */
  ledger?: RunLedger;
  /** The subtask a worker call is for, for the trace. */
  subtaskId?: string;
}

/** A model call's answer: the message (with its usage), what the runnable returned, and who answered. */
export interface ModelReply {
  message: AIMessage;
  output: unknown;
  candidate: ModelCandidate;
  /** The answer was cut off at the output limit, even after it was asked again with more room. */
  cutOff?: boolean;
}

/** A prompt larger than the model's context window (the provider said so, or troupe counted it first). */
export class ContextOverflowError extends ModelError {
  constructor(message: string, data: Record<string, unknown> = {}, options?: ErrorOptions) {
    super("context_overflow", message, data, options);
    this.name = "ContextOverflowError";
  }
}

/** A model that declined to answer; its words are in the message. Not retried: it is an answer. */
export class ModelRefusalError extends ModelError {
  constructor(model: string, refusal: string) {
    super("model_refused", `${model} refused: ${truncate(refusal, 300)}`, { model, refusal: truncate(refusal, 2_000) });
    this.name = "ModelRefusalError";
  }
}

export interface CallShape {
  /** Turns a candidate's model into what is invoked (tools bound, structured output); the model itself by default. */
  prepare?: (candidate: ModelCandidate) => Runnable<BaseLanguageModelInput, unknown>;
  /**
   * Streams the answer when the candidate streams (`stream()`: its pieces joined, the finish
   * reason kept, a stream that ends without one retried), handing each piece of text here.
   */
  onToken?: (text: string) => void;
  /**
   * Each piece of the answer as the model streams it (text and tool-call arguments): with
   * `onToken`, each piece of that stream; without it, while the call itself is made as usual
   * (so structured output is read from the whole answer, though a finish reason may not survive
   * the join). Models that do not stream hand over nothing. `onAttempt` is told when an attempt
   * starts again.
   */
  onChunk?: (chunk: AIMessageChunk) => void;
  onAttempt?: (attempt: number) => void;
}

/**
 * Hands a model's streamed pieces to `onChunk`. `lc_prefer_streaming` makes LangChain stream a
 * call made with `invoke` when the model can, and the provider packages report every piece.
 */
class ChunkListener extends BaseCallbackHandler {
  name = "troupe-chunk-listener";
  lc_prefer_streaming = true;

  constructor(private readonly onChunk: (chunk: AIMessageChunk) => void) {
    super();
  }

  override handleLLMNewToken(_token: string, _index: NewTokenIndices, _runId: string, _parentRunId?: string, _tags?: string[], fields?: HandleLLMNewTokenCallbackFields): void {
    const chunk = fields?.chunk;
    const message = chunk && "message" in chunk ? chunk.message : undefined;
    if (AIMessageChunk.isInstance(message)) this.onChunk(message);
  }
}

/** The message inside what a runnable returned: the message itself, or `raw` of a structured answer. */
function messageOf(output: unknown): AIMessage {
  if (typeof output === "object" && output !== null && "raw" in output && "parsed" in output) return (output as { raw: AIMessage }).raw;
  return output as AIMessage;
}

/**
 * Errors that are an answer, not a failure to get one: the client could not read a structured
 * answer (invalid JSON, cut off at the length limit). They go to the repair round, not to a
 * retry or the next model.
 */
export function isInvalidAnswerError(error: unknown): boolean {
  if (error instanceof SyntaxError) return true;
  const name = errorClassName(error);
  return name === "LengthFinishReasonError" || name === "ContentFilterFinishReasonError" || name === "OutputParserException";
}

function errorClassName(error: unknown): string {
  return (error as { constructor?: { name?: string } } | undefined)?.constructor?.name ?? "";
}

/**
 * Whether a streamed answer says it is complete: OpenAI's finish_reason, Anthropic's stop_reason
 * (in additional_kwargs), Ollama's done_reason.
 */
function streamFinished(message: AIMessageChunk): boolean {
  const metadata = { ...message.additional_kwargs, ...message.response_metadata } as Record<string, unknown>;
  return Boolean(metadata.finish_reason ?? metadata.stop_reason ?? metadata.done_reason ?? metadata.done);
}

/**
 * The callbacks the call inherits (the run's observers, LangGraph's own) with one more handler:
 * callbacks given to `invoke` would otherwise replace those it inherits.
 */
function withListener(listener: BaseCallbackHandler): CallbackManager | BaseCallbackHandler[] {
  const inherited = (AsyncLocalStorageProviderSingleton.getRunnableConfig() as { callbacks?: unknown } | undefined)?.callbacks;
  if (inherited instanceof CallbackManager) return inherited.copy([listener]);
  return [...(Array.isArray(inherited) ? (inherited as BaseCallbackHandler[]) : []), listener];
}

/** One attempt with its own timeout; for a stream, the timeout is the longest wait for the next piece. */
async function attempt(
  runnable: Runnable<BaseLanguageModelInput, unknown>,
  messages: BaseMessage[],
  signals: AbortSignal[],
  timeoutMs: number,
  metadata: Record<string, string>,
  onToken?: (text: string) => void,
  onChunk?: (chunk: AIMessageChunk) => void,
): Promise<{ output: unknown } | { timedOut: true; error: unknown }> {
  const timeout = new AbortController();
  let timer = setTimeout(() => timeout.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  const rearm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => timeout.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  };
  const signal = AbortSignal.any([...signals, timeout.signal]);
  try {
    if (!onToken) return { output: await runnable.invoke(messages, onChunk ? { signal, metadata, callbacks: withListener(new ChunkListener(onChunk)) } : { signal, metadata }) };
    let full: AIMessageChunk | undefined;
    for await (const chunk of (await runnable.stream(messages, { signal, metadata })) as AsyncIterable<AIMessageChunk>) {
      rearm();
      full = full ? full.concat(chunk) : chunk;
      const text = chunk.text;
      if (text) onToken(text);
      onChunk?.(chunk);
    }
    if (!full || !streamFinished(full)) throw new TruncatedStreamError();
    return { output: full };
  } catch (error) {
    if (timeout.signal.aborted && !signals.some((source) => source.aborted)) return { timedOut: true, error };
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** A call's tokens, with what the provider served from or wrote to its cache and what a reasoning model thought with. */
type CallUsage = Pick<ModelUsage, "promptTokens" | "completionTokens" | "cachedPromptTokens" | "cacheWriteTokens" | "reasoningTokens">;

/**
 * Tokens of a call: as the provider reported them (LangChain's usage metadata: OpenAI's
 * `cached_tokens` and `reasoning_tokens`, Anthropic's `cache_read_input_tokens` and
 * `cache_creation_input_tokens`, each part of the totals), else counted with gpt-tokenizer
 * (cl100k_base).
 */
async function usageOf(messages: BaseMessage[], message: AIMessage): Promise<CallUsage> {
  const reported = message.usage_metadata;
  if (reported && reported.input_tokens > 0) {
    const usage: CallUsage = { promptTokens: reported.input_tokens, completionTokens: reported.output_tokens };
    const cached = reported.input_token_details?.cache_read ?? 0;
    const written = reported.input_token_details?.cache_creation ?? 0;
    const reasoning = reported.output_token_details?.reasoning ?? 0;
    if (cached > 0) usage.cachedPromptTokens = cached;
    if (written > 0) usage.cacheWriteTokens = written;
    if (reasoning > 0) usage.reasoningTokens = reasoning;
    return usage;
  }
  return { promptTokens: await countMessageTokens(messages), completionTokens: Math.max(0, (await countMessageTokens([message])) - 3) };
}

/** The output limit an answer cut off at `limit` (or, unknown, after `used` tokens) is asked again with. */
function largerLimit(limit: number | undefined, used: number): number {
  return Math.min(Math.max(2 * (limit ?? 0), 2 * used, 1_024), 128_000);
}

/**
 * One model call, as reliable as troupe makes it. It is admitted against the run's budget; each
 * attempt has a timeout; a failure worth retrying (429, 5xx, reset, timeout, cut-off stream) is
 * retried with exponential backoff and jitter, never sooner than Retry-After; when a model still
 * fails it hands over to the next of its chain, and the run remembers that. Cancellation aborts
 * the call in flight. Tokens come from the provider's usage metadata, else gpt-tokenizer, and cost
 * from the model's price. Tools are never run here, so a retry cannot repeat a side effect.
 */
export async function callModel(route: ModelRoute, messages: BaseMessage[], options: CallOptions, shape: CallShape = {}): Promise<ModelReply> {
  const { ledger } = options;
  const chain = route.candidates.filter((candidate, index) => index === route.candidates.length - 1 || !ledger?.isSkipped(choiceId(candidate.choice)));
  const first = chain[0] as ModelCandidate;
  const held: { reservation?: Reservation } = {};
  if (ledger) held.reservation = ledger.admit(ledger.needsEstimate ? await estimate(messages, first) : undefined);
  try {
    return await callChain(route, chain, messages, options, shape, held);
  } finally {
    // A call that ended without a settled answer gives its reservation back.
    ledger?.release(held.reservation);
  }
}

/** Where a call of one candidate stands: the model it asks (with a larger output limit once it was cut off) and its runnable. */
interface CandidateCall {
  id: string;
  candidate: ModelCandidate;
  runnable: Runnable<BaseLanguageModelInput, unknown>;
  /** An answer cut off at the output limit is asked again once, with more room. */
  enlarged: boolean;
}

type Held = { reservation?: Reservation };
type ModelAttempt = ModelError["attempts"][number];

/** An attempt's answer: a reply, or word that the candidate was enlarged and its attempts start over. */
const ENLARGED = Symbol("enlarged");

/** Each candidate of the chain in turn, with its retries; a candidate that still fails hands over to the next, and the run remembers that. */
async function callChain(route: ModelRoute, chain: ModelCandidate[], messages: BaseMessage[], options: CallOptions, shape: CallShape, held: Held): Promise<ModelReply> {
  const { meter, ledger } = options;
  const attempts: ModelAttempt[] = [];
  let last: { id: string; failed: FailedAttempt<unknown>; count: number } | undefined;
  for (const [position, first] of chain.entries()) {
    const id = choiceId(first.choice);
    const result = await callCandidate(route, { id, candidate: first, runnable: shape.prepare ? shape.prepare(first) : first.model, enlarged: false }, messages, options, shape, held);
    if ("reply" in result) return result.reply;
    for (const failed of result.failures) attempts.push({ model: id, attempt: failed.attempt, reason: failed.reason, error: failed.error });
    const failed = result.failures[result.failures.length - 1] as FailedAttempt<unknown>;
    last = { id, failed, count: failed.attempt };
    const next = chain[position + 1];
    if (!next) break;
    ledger?.skip(id);
    meter.note({ kind: "fallback", role: route.role, model: id, attempt: last.count, reason: failed.reason, to: choiceId(next.choice), ...(options.subtaskId ? { subtaskId: options.subtaskId } : {}), at: Date.now() });
  }
  meter.add({ llmCalls: 1 });
  const { id, failed, count } = last as NonNullable<typeof last>;
  const tries = count === 1 ? "1 attempt" : `${count} attempts`;
  const every = attempts.length > 1 ? ` (every attempt: ${describeAttempts(attempts.map((entry) => ({ ...entry, label: entry.model })))})` : "";
  throw new ModelError("model_call_failed", `${id} failed after ${tries}: ${failed.reason}${every}`, { model: id, attempts: count }, { cause: failed.error, attempts });
}

/**
 * One candidate's attempts under the route's retry policy (src/core/retry.ts): the shared retry
 * loop, started over once when the answer was cut off and the candidate asked again with more room.
 */
async function callCandidate(route: ModelRoute, call: CandidateCall, messages: BaseMessage[], options: CallOptions, shape: CallShape, held: Held): Promise<{ reply: ModelReply } | { failures: FailedAttempt<unknown>[] }> {
  const { meter, ledger } = options;
  const signals = [options.signal, ledger?.signal].filter((signal): signal is AbortSignal => signal !== undefined);
  const failures: FailedAttempt<unknown>[] = [];
  for (;;) {
    const result = await retry((attemptNumber) => attemptCandidate(route, call, attemptNumber, messages, options, shape, held, signals), {
      policy: route.policy,
      signal: AbortSignal.any(signals),
      onRetry: (failed, delayMs) => meter.note({ kind: "retry", role: route.role, model: call.id, attempt: failed.attempt, reason: failed.reason, delayMs, ...(options.subtaskId ? { subtaskId: options.subtaskId } : {}), at: Date.now() }),
    });
    failures.push(...result.failures);
    if (result.ok) {
      if (result.value === ENLARGED) continue;
      return { reply: result.value };
    }
    if (result.stop === "aborted") {
      // Cancellation or the end of the run's wall time cut the backoff short.
      if (ledger?.signal.aborted && !options.signal?.aborted) ledger.refuse(ledger.wallTimeStop());
      throw result.abortError;
    }
    return { failures };
  }
}

/** Asks the call's candidate again with a larger output limit, once: the second call is admitted against the budget like the first. */
async function enlarge(route: ModelRoute, call: CandidateCall, used: number, messages: BaseMessage[], options: CallOptions, shape: CallShape, held: Held): Promise<boolean> {
  const { candidate } = call;
  if (call.enlarged || !candidate.withOutputLimit) return false;
  call.enlarged = true;
  const limit = largerLimit(candidate.maxOutputTokens, used);
  options.meter.note({ kind: "retry", role: route.role, model: call.id, attempt: 1, reason: `the answer was cut off at the output limit; asked again with room for ${limit} tokens`, delayMs: 0, ...(options.subtaskId ? { subtaskId: options.subtaskId } : {}), at: Date.now() });
  call.candidate = { ...candidate, model: candidate.withOutputLimit(limit), maxOutputTokens: limit };
  call.runnable = shape.prepare ? shape.prepare(call.candidate) : call.candidate.model;
  if (options.ledger) held.reservation = options.ledger.admit(options.ledger.needsEstimate ? await estimate(messages, call.candidate) : undefined);
  return true;
}

/**
 * One attempt of a candidate: its answer measured and settled against the budget, or its failure
 * classified for the retry loop. What no retry can change is thrown: a refusal, a cancellation,
 * an exhausted budget, an answer the client could not read, a prompt too large for the model.
 */
async function attemptCandidate(
  route: ModelRoute,
  call: CandidateCall,
  attemptNumber: number,
  messages: BaseMessage[],
  options: CallOptions,
  shape: CallShape,
  held: Held,
  signals: AbortSignal[],
): Promise<AttemptResult<ModelReply | typeof ENLARGED, unknown>> {
  const { meter, ledger } = options;
  const { policy } = route;
  const candidate = call.candidate;
  const onToken = shape.onToken && candidate.streams ? shape.onToken : undefined;
  // Anthropic caches what comes before a breakpoint: the tools and the system prompt, the stable start of every call.
  const sent = candidate.promptCaching === "anthropic" ? withCacheBreakpoint(messages) : messages;
  try {
    shape.onAttempt?.(attemptNumber);
    // The callbacks (the server's run observer) learn who calls which model from the call itself.
    const metadata = modelCallMetadata(route.role, candidate.choice, options.subtaskId);
    const result = await attempt(call.runnable, sent, signals, policy.timeoutMs, metadata, onToken, shape.onChunk);
    if (!("output" in result)) return { failure: { retryable: true, reason: `timed out after ${formatSeconds(policy.timeoutMs)}`, error: result.error } };
    const message = messageOf(result.output);
    const usage = await usageOf(messages, message);
    const costUsd = costOf(candidate.price, usage);
    meter.add({ llmCalls: 1, ...usage, costUsd });
    ledger?.settle({ ...usage, costUsd }, held.reservation);
    const refusal = refusalOf(message);
    if (refusal !== undefined) throw new ModelRefusalError(call.id, refusal);
    if (isCutOff(message) && (await enlarge(route, call, usage.completionTokens, messages, options, shape, held))) return { value: ENLARGED };
    return { value: { message, output: result.output, candidate, ...(isCutOff(message) ? { cutOff: true } : {}) } };
  } catch (error) {
    if (error instanceof ModelRefusalError) throw error;
    if (options.signal?.aborted) {
      meter.add({ llmCalls: 1 });
      throw error;
    }
    if (ledger?.signal.aborted) {
      meter.add({ llmCalls: 1 });
      ledger.refuse(ledger.wallTimeStop());
    }
    if (isBudgetExhausted(error)) throw error;
    if (errorClassName(error) === "LengthFinishReasonError") {
      // A structured answer cut off before it could be read (the OpenAI client's parse): asked again with more room, once.
      const promptTokens = await countMessageTokens(messages);
      meter.add({ llmCalls: 1, promptTokens });
      ledger?.settle({ promptTokens, completionTokens: 0, costUsd: 0 }, held.reservation);
      if (await enlarge(route, call, candidate.maxOutputTokens ?? 0, messages, options, shape, held)) return { value: ENLARGED };
      throw error;
    }
    if (isInvalidAnswerError(error)) {
      meter.add({ llmCalls: 1, promptTokens: await countMessageTokens(messages) });
      throw error;
    }
    if (isContextOverflow(error)) {
      meter.add({ llmCalls: 1 });
      throw new ContextOverflowError(`${call.id}: the prompt is larger than the model's context window (${modelFailure(error)})`, { model: call.id }, { cause: error });
    }
    let failure = classifyFailure(error);
    if (failure.retryAfterMs !== undefined && failure.retryAfterMs > policy.retryAfterMaxMs) {
      failure = { retryable: false, reason: `${failure.reason} with Retry-After ${formatSeconds(failure.retryAfterMs)}, longer than troupe waits` };
    }
    return { failure: { ...failure, error } };
  }
}

/** The prompt's tokens and cost, for admitting a call under a token or cost limit. */
async function estimate(messages: BaseMessage[], candidate: ModelCandidate): Promise<{ tokens: number; costUsd: number }> {
  const tokens = await countMessageTokens(messages);
  return { tokens, costUsd: costOf(candidate.price, { promptTokens: tokens, completionTokens: 0 }) };
}

function formatSeconds(milliseconds: number): string {
  return milliseconds < 1000 ? `${milliseconds} ms` : `${Number((milliseconds / 1000).toFixed(1))} s`;
}

/** A model error as a one-line reason. */
export function modelFailure(error: unknown): string {
  return errorMessage(error).split("\n")[0] ?? "model call failed";
}
