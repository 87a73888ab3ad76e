import { countTextTokens } from "../../src/providers/token-count.js";

/**
 * What every framework sent to the model and got back, counted one way for all of them: a prompt
 * is its messages (each message's text plus the JSON of any tool calls it carries, about 4 tokens
 * of framing each, 3 for the reply) plus the JSON of the tool definitions in the OpenAI function
 * shape; a reply is its text plus the JSON of its tool calls. One tokenizer (cl100k_base, from
 * gpt-tokenizer, as bench/prompt-tokens.ts and troupe's budgets use) for every framework.
 */

/** A message as counted: its text, and the tool calls it carries in LangChain's shape. */
export interface CountedMessage {
  text: string;
  toolCalls?: Array<{ name: string; args: unknown; id: string; type: "tool_call" }>;
}

/** A tool definition as counted: the OpenAI function shape. */
export interface CountedTool {
  type: "function";
  function: { name: string; description: string; parameters: unknown };
}

export async function countPrompt(messages: readonly CountedMessage[], tools: readonly CountedTool[]): Promise<number> {
  let total = 3;
  for (const message of messages) total += 4 + (await countTextTokens(messageText(message)));
  return total + (tools.length > 0 ? await countTextTokens(JSON.stringify(tools)) : 0);
}

export async function countReply(message: CountedMessage): Promise<number> {
  return countTextTokens(messageText(message));
}

function messageText(message: CountedMessage): string {
  return message.text + (message.toolCalls && message.toolCalls.length > 0 ? JSON.stringify(message.toolCalls) : "");
}

/** One model call. `role` is what the oracle played (planner, worker, supervisor, triage…). */
export interface ModelCallRecord {
  role: string;
  promptTokens: number;
  completionTokens: number;
}

/**
 * The simulated model's speed: a fixed time to the first token, then so much per prompt token
 * and per completion token (the same for every framework, so a longer prompt or a longer answer
 * costs time as it would on a provider).
 */
export interface ModelLatency {
  firstTokenMs: number;
  perPromptTokenMs: number;
  perCompletionTokenMs: number;
}

/** About a tenth of a hosted model's times (300–1,000 ms to the first token, 10–20 ms a token out), so the benchmark runs in minutes. */
export const BENCH_MODEL_LATENCY: ModelLatency = { firstTokenMs: 100, perPromptTokenMs: 0.01, perCompletionTokenMs: 1 };
/** Closer to hosted models: 500 ms to the first token and 15 ms a completion token (the prompt's share as in the bench's own profile). */
export const HOSTED_MODEL_LATENCY: ModelLatency = { firstTokenMs: 500, perPromptTokenMs: 0.01, perCompletionTokenMs: 15 };
export const NO_MODEL_LATENCY: ModelLatency = { firstTokenMs: 0, perPromptTokenMs: 0, perCompletionTokenMs: 0 };

export const sleep = (ms: number): Promise<void> => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

/** The model calls of one run, and the simulated time they take. */
export class Meter {
  readonly calls: ModelCallRecord[] = [];
  readonly #latency: ModelLatency;

  constructor(latency: ModelLatency) {
    this.#latency = latency;
  }

  /** Records a call and waits as long as the simulated model would take to answer it. */
  async record(role: string, prompt: { messages: readonly CountedMessage[]; tools: readonly CountedTool[] }, reply: CountedMessage): Promise<void> {
    const { firstMs, outputMs } = await this.note(role, prompt, reply);
    await sleep(firstMs + outputMs);
  }

  /** Records a call and says how long the simulated model takes to its first token, and then to write its answer (for a caller that streams it). */
  async note(role: string, prompt: { messages: readonly CountedMessage[]; tools: readonly CountedTool[] }, reply: CountedMessage): Promise<{ firstMs: number; outputMs: number }> {
    const promptTokens = await countPrompt(prompt.messages, prompt.tools);
    const completionTokens = await countReply(reply);
    this.calls.push({ role, promptTokens, completionTokens });
    return { firstMs: this.#latency.firstTokenMs + this.#latency.perPromptTokenMs * promptTokens, outputMs: this.#latency.perCompletionTokenMs * completionTokens };
  }

  get promptTokens(): number {
    return this.calls.reduce((sum, call) => sum + call.promptTokens, 0);
  }

  get completionTokens(): number {
    return this.calls.reduce((sum, call) => sum + call.completionTokens, 0);
  }
}
