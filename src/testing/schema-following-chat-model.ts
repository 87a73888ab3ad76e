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
 * How much of a schema a generated answer fills: `required` fills only what it must (nullable
 * fields null, optional properties left out, lists of plain values empty) — a careful model;
 * `everything` fills every field the schema allows (a nullable field gets its other branch, every
 * optional property is there, every list has an item, booleans are true) — a careless one.
 */
export type SchemaFill = "required" | "everything";

/**
 * A value that fits `schema`, made without reading the prompt: what a server that only follows
 * the request's JSON schema would answer. Enums take their first value, strings are
 * `ok <field>`, numbers the largest allowed (1 when unbounded); with `required` (the default)
 * nullable fields are null, booleans false, an object gets its required properties, a list of
 * objects one item and a list of plain values none; with `everything` see SchemaFill. Lists keep
 * within minItems and maxItems.
 */
export function valueFromSchema(schema: Schema, field = "value", fill: SchemaFill = "required", depth = 0): unknown {
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const everything = fill === "everything";
  if (depth > 32) return null;
  if (!everything && isNullable(schema)) return null;
  if (Array.isArray(schema.anyOf) && schema.anyOf.length > 0) {
    const branches = schema.anyOf as Schema[];
    const branch = everything ? (branches.find((candidate) => !isNullable(candidate)) ?? branches[0]) : branches[0];
    return valueFromSchema(branch as Schema, field, fill, depth + 1);
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
  const type = everything ? (types.find((name) => name !== "null") ?? types[0]) : types[0];
  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      return Object.fromEntries(Object.entries(properties).flatMap(([name, property]) => (everything || required.has(name) ? [[name, valueFromSchema(property, name, fill, depth + 1)]] : [])));
    }
    case "array": {
      const items = (schema.items ?? {}) as Schema;
      // A list of objects (or of a union of object shapes) gets one; a list of anything else none.
      const branches = Array.isArray(items.anyOf) ? (items.anyOf as Schema[]) : [];
      const itemType = Array.isArray(items.type) ? items.type[0] : (items.type ?? (branches.length > 0 && branches.every((branch) => branch.type === "object") ? "object" : undefined));
      const wanted = everything || itemType === "object" ? 1 : 0;
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      const max = typeof schema.maxItems === "number" ? schema.maxItems : Number.POSITIVE_INFINITY;
      const count = Math.min(Math.max(wanted, min), max);
      return Array.from({ length: count }, () => valueFromSchema(items, field, fill, depth + 1));
    }
    case "string":
      return `ok ${field}`;
    case "number":
    case "integer":
      return typeof schema.maximum === "number" ? schema.maximum : typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return everything;
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
  /** How much of each schema its answers fill (see SchemaFill). */
  fill: SchemaFill = "required";

  /** A careful brain (`required`) or a careless one (`everything`). */
  static filling(fill: SchemaFill): SchemaFollowingChatModel {
    const model = new SchemaFollowingChatModel({});
    model.fill = fill;
    return model;
  }

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
    const answer = valueFromSchema(schema, "value", this.fill);
    this.calls.push({ name, schema, answer });
    const message = new AIMessageChunk({ content: "", tool_calls: [{ id: `schema_${this.calls.length}`, name, args: answer as Record<string, unknown>, type: "tool_call" }] });
    return { generations: [{ text: "", message }] };
  }
}
