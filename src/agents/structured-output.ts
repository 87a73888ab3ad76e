import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import { type AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import type { Runnable } from "@langchain/core/runnables";
import { z } from "zod";
import { ModelError } from "../core/errors.js";
import type { ModelCandidate, ModelRoute } from "../providers/registry.js";
import { type CallOptions, callModel, isInvalidAnswerError } from "./model-call.js";

export interface StructuredRequest<Schema extends z.ZodType> {
  route: ModelRoute;
  schema: Schema;
  name: string;
  description: string;
  messages: BaseMessage[];
}

const schemaCache = new WeakMap<z.ZodType, Record<string, unknown>>();

/** A zod schema as JSON schema, converted once per schema. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  let parameters = schemaCache.get(schema);
  if (!parameters) {
    parameters = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    delete parameters.$schema;
    schemaCache.set(schema, parameters);
  }
  return parameters;
}

type StructuredRunnable = Runnable<BaseLanguageModelInput, { raw: AIMessage; parsed: unknown }>;
const runnableCache = new WeakMap<object, Map<string, StructuredRunnable>>();

/**
 * The candidate's model asked for `name` in its native way (`withStructuredOutput`): a
 * JSON-schema response format (OpenAI, Ollama, Anthropic JSON outputs) or a forced tool call.
 * It gets the JSON schema, not the zod schema, so troupe validates the answer itself and can
 * send the model its exact mistakes.
 */
function structuredRunnable(candidate: ModelCandidate, name: string, description: string, schema: z.ZodType): StructuredRunnable {
  let byName = runnableCache.get(candidate.model);
  if (!byName) {
    byName = new Map();
    runnableCache.set(candidate.model, byName);
  }
  const key = `${candidate.structuredMethod} ${name}`;
  let runnable = byName.get(key);
  if (!runnable) {
    runnable = candidate.model.withStructuredOutput({ ...jsonSchemaOf(schema), title: name, description }, { name, method: candidate.structuredMethod, includeRaw: true }) as StructuredRunnable;
    byName.set(key, runnable);
  }
  return runnable;
}

function contentText(message: AIMessage): string {
  return typeof message.content === "string" ? message.content : message.text;
}

/** The answer a structured reply carries, or why there is none. */
function answerOf(raw: AIMessage, parsed: unknown, name: string, candidate: ModelCandidate): { value: unknown } | { problem: string } {
  if (parsed !== null && parsed !== undefined) return { value: parsed };
  if (candidate.structuredMethod === "functionCalling") {
    const invalid = raw.invalid_tool_calls?.find((call) => call.name === name);
    if (invalid) return { problem: `the arguments of ${name} were not valid JSON${invalid.error ? ` (${invalid.error})` : ""}` };
    const call = raw.tool_calls?.find((toolCall) => toolCall.name === name);
    return call ? { value: call.args } : { problem: `the answer did not call ${name}` };
  }
  try {
    return { value: JSON.parse(contentText(raw)) };
  } catch (error) {
    return { problem: `the answer was not valid JSON (${(error as Error).message})` };
  }
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
export async function invokeStructured<Schema extends z.ZodType>(request: StructuredRequest<Schema>, options: CallOptions): Promise<z.infer<Schema>> {
  const { route, schema, name, description } = request;
  const messages = [...request.messages];
  let lastProblem = "";
  for (let round = 0; round < 2; round += 1) {
    let raw: AIMessage | undefined;
    let answered: ModelCandidate;
    let answer: { value: unknown } | { problem: string };
    try {
      const reply = await callModel(route, messages, options, { prepare: (candidate) => structuredRunnable(candidate, name, description, schema) });
      const output = reply.output as { raw: AIMessage; parsed: unknown };
      raw = output.raw;
      answered = reply.candidate;
      answer = answerOf(output.raw, output.parsed, name, reply.candidate);
    } catch (error) {
      if (!isInvalidAnswerError(error)) throw error;
      answered = route.candidates[0] as ModelCandidate;
      answer = { problem: `the answer could not be read: ${(error as Error).message}` };
    }
    if ("value" in answer) {
      const parsed = schema.safeParse(answer.value);
      if (parsed.success) return parsed.data;
      lastProblem = z.prettifyError(parsed.error);
    } else {
      lastProblem = answer.problem;
    }
    messages.push(...repairMessages(raw, lastProblem, name, answered));
  }
  throw new ModelError("invalid_structured_output", `the model's ${name} answer was invalid after one repair: ${lastProblem}`, { name });
}
