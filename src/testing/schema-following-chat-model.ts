import type { BaseMessage } from "@langchain/core/messages";
import { AIMessageChunk } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import type { ToolSpec } from "../core/tool-spec.js";
import { type ToolCallingCallOptions, ToolCallingChatModel } from "../providers/tool-calling-chat-model.js";

type Schema = Record<string, unknown>;

/** One structured request the brain answered: the function it was forced to call and the schema it read. */
export interface SchemaFollowingCall {
  name: string;
  schema: Schema;
  answer: unknown;
}

/** The name a forced `tool_choice` names, in the shapes LangChain and the providers use. */
function forcedName(choice: unknown): string | undefined {
  if (typeof choice === "string") return ["auto", "any", "none", "required"].includes(choice) ? undefined : choice;
  if (typeof choice !== "object" || choice === null) return undefined;
  const record = choice as { name?: unknown; function?: { name?: unknown } };
  if (typeof record.function?.name === "string") return record.function.name;
  return typeof record.name === "string" ? record.name : undefined;
}

function isNullable(schema: Schema): boolean {
  if (schema.type === "null") return true;
  if (Array.isArray(schema.type) && schema.type.includes("null")) return true;
  return Array.isArray(schema.anyOf) && (schema.anyOf as Schema[]).some(isNullable);
}

/**
 * A value that fits `schema`, made without reading the prompt: what a server that only follows
 * the request's JSON schema would answer. Enums take their first value, nullable fields are
 * null, strings are `ok <field>`, numbers the largest allowed (1 when unbounded), booleans
 * false; an object gets its required properties; a list of objects gets one item, a list of
 * plain values none (each as far as minItems and maxItems allow).
 */
export function valueFromSchema(schema: Schema, field = "value"): unknown {
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (isNullable(schema)) return null;
  if (Array.isArray(schema.anyOf) && schema.anyOf.length > 0) return valueFromSchema(schema.anyOf[0] as Schema, field);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      return Object.fromEntries(Object.entries(properties).flatMap(([name, property]) => (required.has(name) ? [[name, valueFromSchema(property, name)]] : [])));
    }
    case "array": {
      const items = (schema.items ?? {}) as Schema;
      const itemType = Array.isArray(items.type) ? items.type[0] : items.type;
      const wanted = itemType === "object" ? 1 : 0;
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      const max = typeof schema.maxItems === "number" ? schema.maxItems : Number.POSITIVE_INFINITY;
      const count = Math.min(Math.max(wanted, min), max);
      return Array.from({ length: count }, () => valueFromSchema(items, field));
    }
    case "string":
      return `ok ${field}`;
    case "number":
    case "integer":
      return typeof schema.maximum === "number" ? schema.maximum : typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return `ok ${field}`;
  }
}

/**
 * A stand-in for a generic OpenAI-compatible server: used as a fake server's brain, it answers
 * a structured request (a forced tool call or a JSON-schema response format, which the fake
 * servers hand over as a forced tool) with a value generated from that request's own JSON
 * schema, and every other call with plain text. It records the schemas it read.
 */
export class SchemaFollowingChatModel extends ToolCallingChatModel {
  readonly calls: SchemaFollowingCall[] = [];

  static override lc_name(): string {
    return "TroupeSchemaFollowingChatModel";
  }

  override _llmType(): string {
    return "troupe-schema-following";
  }

  override async _generate(_messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const name = forcedName(options.tool_choice);
    const tool = (options.tools ?? []).find((spec: ToolSpec) => spec.function.name === name);
    if (!name || !tool) return { generations: [{ text: "ok", message: new AIMessageChunk("ok") }] };
    const schema = (tool.function.parameters ?? {}) as Schema;
    const answer = valueFromSchema(schema);
    this.calls.push({ name, schema, answer });
    const message = new AIMessageChunk({ content: "", tool_calls: [{ id: `schema_${this.calls.length}`, name, args: answer as Record<string, unknown>, type: "tool_call" }] });
    return { generations: [{ text: "", message }] };
  }
}
