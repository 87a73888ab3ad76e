import { describe, expect, it } from "vitest";
import { z } from "zod";
import { describeKeywords, isStrictCompatible, wireJsonSchema } from "./wire-schema.js";

describe("wire JSON schemas", () => {
  const schema = z.object({
    name: z.string().min(1).max(20).describe("a name"),
    note: z.string().nullable().describe("a note"),
    tags: z.array(z.string()).max(3).default([]),
    score: z.number().min(0).max(1),
  });

  it("closes every object, requires every property, and writes nullable types as anyOf without defaults or string lengths", () => {
    expect(wireJsonSchema(schema)).toEqual({
      type: "object",
      properties: {
        name: { type: "string", description: "a name (at most 20 characters)" },
        note: { description: "a note", anyOf: [{ type: "string" }, { type: "null" }] },
        tags: { type: "array", items: { type: "string" }, maxItems: 3 },
        score: { type: "number", minimum: 0, maximum: 1 },
      },
      required: ["name", "note", "tags", "score"],
      additionalProperties: false,
    });
  });

  it("moves the keywords a provider's strict mode refuses into descriptions", () => {
    const relaxed = describeKeywords(wireJsonSchema(schema), ["maxItems", "minimum", "maximum"]) as { properties: Record<string, Record<string, unknown>> };
    expect(relaxed.properties.tags).toEqual({ type: "array", items: { type: "string" }, description: "at most 3 items" });
    expect(relaxed.properties.score).toEqual({ type: "number", description: "at least 0, at most 1" });
  });

  it("tells a strict-compatible schema from one strict mode would refuse", () => {
    expect(isStrictCompatible(wireJsonSchema(schema))).toBe(true);
    expect(isStrictCompatible(wireJsonSchema(z.object({ open: z.record(z.string(), z.string()) })))).toBe(false);
    expect(isStrictCompatible(wireJsonSchema(z.object({ maybe: z.string().optional() })))).toBe(false);
    expect(isStrictCompatible(wireJsonSchema(z.object({ anything: z.unknown() })))).toBe(false);
    expect(isStrictCompatible(wireJsonSchema(z.union([z.object({ a: z.string() }), z.object({ b: z.string() })])))).toBe(false);
  });
});
