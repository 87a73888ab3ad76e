import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import { type AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { type Runnable, RunnableLambda } from "@langchain/core/runnables";
import { z } from "zod";
import { ModelError } from "../core/errors.js";
import { answerInText } from "../core/json-text.js";
import { fitToSchema } from "../core/schema-fit.js";
import { describeKeywords, isStrictCompatible, type JsonSchema, wireJsonSchema } from "../core/wire-schema.js";
import type { ModelCandidate, ModelRoute } from "../providers/registry.js";
import { continueAnswer } from "./continuation.js";
import { type CallOptions, type CallShape, callModel, isInvalidAnswerError } from "./model-call.js";

export interface StructuredRequest<Schema extends z.ZodType, Output = z.infer<Schema>> {
  route: ModelRoute;
  /** What the provider is sent, as JSON schema (see wireJsonSchema); it also reads the answer unless `read` is given. */
  schema: Schema;
  /** A JSON Schema to send instead of `schema`'s (a user's output schema); `read` then reads the answer. */
  jsonSchema?: JsonSchema;
  /** Reads the answer into what the caller wants, or says what is wrong with it (sent back in the repair round). */
  read?: (answer: unknown) => { success: true; data: Output } | { success: false; error: string };
  name: string;
  description: string;
  messages: BaseMessage[];
  /** The first answer's pieces as the model streams them (see CallShape.onChunk); a repair round is not streamed here. */
  stream?: Pick<CallShape, "onChunk" | "onAttempt">;
}

const schemaCache = new WeakMap<z.ZodType, JsonSchema>();

/** A zod schema as the JSON schema sent to providers (`wireJsonSchema`), converted once per schema object. */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  let parameters = schemaCache.get(schema);
  if (!parameters) {
    parameters = wireJsonSchema(schema);
    schemaCache.set(schema, parameters);
  }
  return parameters;
}

type StructuredRunnable = Runnable<BaseLanguageModelInput, { raw: AIMessage; parsed: unknown }>;
/** By model, then by schema object (schemas built per call are memoised by their content), then by method, strictness and name. */
const runnableCache = new WeakMap<object, WeakMap<object, Map<string, StructuredRunnable>>>();

/** Whether this candidate's request for `parameters` asks for strict adherence: when its provider has strict mode on and the schema fits it. */
export function strictFor(candidate: ModelCandidate, parameters: JsonSchema): boolean {
  return candidate.strict === true && candidate.structuredMethod !== "jsonMode" && isStrictCompatible(parameters);
}

/**
 * The candidate's model asked for `name` in its native way (`withStructuredOutput`): a
 * JSON-schema response format (OpenAI, Ollama, Anthropic JSON outputs) or a forced tool call,
 * in strict mode where the provider has it (OpenAI `strict: true`, Anthropic strict tools; the
 * keywords its strict mode refuses move into descriptions). It gets the JSON schema, not the
 * zod schema, so troupe validates the answer itself and can send the model its exact mistakes.
 * A model that thinks first (Anthropic extended thinking) cannot be forced to call a tool: it is
 * offered the tool, and its answer — a call, or the JSON in its text — is read the same way.
 */
function structuredRunnable(candidate: ModelCandidate, name: string, description: string, schema: object, parameters: JsonSchema): StructuredRunnable {
  let bySchema = runnableCache.get(candidate.model);
  if (!bySchema) {
    bySchema = new WeakMap();
    runnableCache.set(candidate.model, bySchema);
  }
  let byKey = bySchema.get(schema);
  if (!byKey) {
    byKey = new Map();
    bySchema.set(schema, byKey);
  }
  const strict = strictFor(candidate, parameters);
  const offered = candidate.thinks === true && candidate.structuredMethod === "functionCalling";
  const key = `${candidate.structuredMethod} ${strict} ${offered} ${(candidate.strictUnsupported ?? []).join(",")} ${name} ${description}`;
  let runnable = byKey.get(key);
  if (!runnable) {
    const sent = strict ? describeKeywords(parameters, candidate.strictUnsupported ?? []) : parameters;
    if (offered && typeof candidate.model.bindTools === "function") {
      const tool = { type: "function" as const, function: { name, description, parameters: sent } };
      runnable = candidate.model
        // `strict` is a call option of the tool-calling providers (Anthropic, OpenAI), not of every chat model.
        .bindTools([tool], (strict ? { strict: true } : {}) as Record<string, never>)
        .pipe(RunnableLambda.from((raw: AIMessage) => ({ raw, parsed: null }))) as unknown as StructuredRunnable;
    } else {
      // The name goes as `name` (every provider takes it from there); a `title` too would be sent inside the parameters again.
      runnable = candidate.model.withStructuredOutput(
        { ...sent, description },
        { name, method: candidate.structuredMethod, includeRaw: true, ...(strict ? { strict: true } : {}) },
      ) as StructuredRunnable;
    }
    byKey.set(key, runnable);
  }
  return runnable;
}

function contentText(message: AIMessage): string {
  return typeof message.content === "string" ? message.content : message.text;
}

/**
 * The answer a structured reply carries, read the way real models give it, or why there is
 * none: the client's parse; a call of `name` (the first of duplicates), or the one call made
 * under another name; JSON in the text — bare, fenced, after prose, or a call spelled out —
 * where a call or JSON content was asked for.
 */
function answerOf(raw: AIMessage, parsed: unknown, name: string, cutOff: boolean): { value: unknown } | { problem: string } {
  if (parsed !== null && parsed !== undefined) return { value: parsed };
  const calls = raw.tool_calls ?? [];
  const call = calls.find((toolCall) => toolCall.name === name) ?? (calls.length === 1 ? calls[0] : undefined);
  if (call) return { value: call.args };
  const text = contentText(raw);
  const inText = answerInText(text, name);
  if (inText) return inText;
  if (cutOff) return { problem: `the answer was cut off at the output limit before it was complete; give it again, more briefly` };
  const invalid = raw.invalid_tool_calls?.find((toolCall) => toolCall.name === name);
  if (invalid) return { problem: `the arguments of ${name} were not valid JSON${invalid.error ? ` (${invalid.error})` : ""}` };
  if (text.trim() === "" && calls.length === 0) return { problem: `the answer was empty: answer with ${name}` };
  if (calls.length > 1) return { problem: `the answer called ${calls.map((other) => other.name).join(", ")}, not ${name}` };
  return { problem: `the answer held no JSON and did not call ${name}` };
}

/** The JSON text of an answer cut off at the output limit, when it came as text the model can go on from: a call's unreadable arguments, or JSON content. */
function partialJsonOf(raw: AIMessage, name: string): string | undefined {
  const invalid = raw.invalid_tool_calls?.find((toolCall) => toolCall.name === name) ?? (raw.invalid_tool_calls?.length === 1 ? raw.invalid_tool_calls[0] : undefined);
  if (invalid?.args) return invalid.args;
  if ((raw.tool_calls ?? []).length > 0) return undefined;
  const text = contentText(raw).trimStart().replace(/^```(?:json)?\s*/, "");
  return /^[[{]/.test(text) ? text : undefined;
}

/** A cut-off JSON answer continued where it stopped (see continuation.ts), and read. */
async function continuedAnswer(route: ModelRoute, messages: BaseMessage[], partial: string, name: string, options: CallOptions, cutBy: ModelCandidate): Promise<{ value: unknown } | { problem: string }> {
  const continued = await continueAnswer(route, messages, partial, options, { json: true, cutBy });
  if (continued.cutOff) return { problem: `the answer was cut off at the output limit, even after ${continued.rounds} requests to continue it; give it again, more briefly` };
  return answerInText(continued.text, name) ?? { problem: "the answer, continued where it was cut off, was not valid JSON" };
}

/** Messages that tell the model what was wrong, in the shape its method needs. */
function repairMessages(raw: AIMessage | undefined, problem: string, name: string, candidate: ModelCandidate): BaseMessage[] {
  const messages: BaseMessage[] = [];
  if (raw) {
    messages.push(raw);
    for (const toolCall of raw.tool_calls ?? []) {
      messages.push(new ToolMessage({ tool_call_id: toolCall.id ?? "", name: toolCall.name, content: `invalid: ${problem}` }));
    }
  }
  const again = candidate.structuredMethod === "functionCalling" ? `Call ${name} again with a corrected answer.` : "Answer again with the corrected JSON object only.";
  messages.push(new HumanMessage(`That answer was not valid:\n${problem}\n${again}`));
  return messages;
}

/**
 * Asks for a machine-read answer through the provider's native structured output and validates
 * it with the zod schema. An invalid answer gets one repair round with the validation errors; a
 * second invalid answer is a ModelError the caller turns into a failed step.
 */
export async function invokeStructured<Schema extends z.ZodType, Output = z.infer<Schema>>(request: StructuredRequest<Schema, Output>, options: CallOptions): Promise<Output> {
  const { route, schema, name, description } = request;
  const parameters = request.jsonSchema ?? jsonSchemaOf(schema);
  const key: object = request.jsonSchema ?? schema;
  const read = request.read ?? ((answer: unknown) => {
    const parsed = schema.safeParse(answer);
    return parsed.success ? { success: true as const, data: parsed.data as Output } : { success: false as const, error: z.prettifyError(parsed.error) };
  });
  const messages = [...request.messages];
  let lastProblem = "";
  for (let round = 0; round < 2; round += 1) {
    let raw: AIMessage | undefined;
    let answered: ModelCandidate;
    let answer: { value: unknown } | { problem: string };
    try {
      const stream = round === 0 ? request.stream : undefined;
      const reply = await callModel(route, messages, options, { prepare: (candidate) => structuredRunnable(candidate, name, description, key, parameters), ...stream });
      const output = reply.output as { raw: AIMessage; parsed: unknown };
      raw = output.raw;
      answered = reply.candidate;
      const partial = reply.cutOff && output.parsed == null ? partialJsonOf(output.raw, name) : undefined;
      answer = partial === undefined ? answerOf(output.raw, output.parsed, name, reply.cutOff === true) : await continuedAnswer(route, messages, partial, name, options, reply.candidate);
    } catch (error) {
      if (!isInvalidAnswerError(error)) throw error;
      answered = route.candidates[0] as ModelCandidate;
      answer = { problem: `the answer could not be read: ${(error as Error).message}` };
    }
    if ("value" in answer) {
      // A value of the wrong type where a person would read it plainly ("0.9" for a number) is taken as meant.
      const parsed = read(fitToSchema(answer.value, parameters).value);
      if (parsed.success) return parsed.data;
      lastProblem = parsed.error;
    } else {
      lastProblem = answer.problem;
    }
    messages.push(...repairMessages(raw, lastProblem, name, answered));
  }
  throw new ModelError("invalid_structured_output", `the model's ${name} answer was invalid after one repair: ${lastProblem}`, { name });
}
