import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createAgentRegistry } from "../../src/agents/index.js";
import { plannerReadContext, plannerSchema } from "../../src/agents/planner.js";
import { jsonSchemaOf } from "../../src/agents/structured-output.js";
import { readSubmission, SUBMIT_RESULT_SPEC, SubmittedResult } from "../../src/agents/agent-loop-result.js";
import { validatePlan } from "../../src/core/plan.js";
import { readPlanAnswer } from "../../src/core/plan-wire.js";
import { reviewWireSchema } from "../../src/core/review-wire.js";
import { voteSchema } from "../../src/core/vote.js";
import { agentProfiles, fileTools } from "../../src/core/plan-check.js";
import { createToolPlatform } from "../../src/runtime/tool-platform.js";
import { resolveToolsConfig } from "../../src/config/tools-config.js";

type Schema = Record<string, unknown>;

/**
 * Answers generated from a JSON schema — any value the schema admits, optional fields filled or
 * left out — over the subset troupe's schemas use: const, enum, anyOf, objects, arrays, strings,
 * numbers, integers, booleans, null. Strings mix arbitrary text with the names real answers use
 * (subtask ids, handles, JSONPaths), so references point somewhere often enough to matter.
 * (A generator of our own rather than json-schema-faker: the subset is small, and fast-check
 * shrinks what it makes to the smallest failing answer.)
 */
function arbitraryOf(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.anyOf)) return fc.oneof(...(schema.anyOf as Schema[]).map((branch) => arbitraryOf(branch, depth + 1)));
  const type = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  if (type.length > 1) return fc.oneof(...type.map((name) => arbitraryOf({ ...schema, type: name }, depth + 1)));
  switch (type[0]) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const model = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, arbitraryOf(property, depth + 1)]));
      const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
      return fc.record(model, { requiredKeys: required });
    }
    case "array": {
      const max = Math.min(typeof schema.maxItems === "number" ? schema.maxItems : 3, depth > 4 ? 1 : 3);
      const min = Math.min(typeof schema.minItems === "number" ? schema.minItems : 0, max);
      return fc.array(arbitraryOf((schema.items ?? {}) as Schema, depth + 1), { minLength: min, maxLength: max });
    }
    case "string":
      return fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("s1", "s2", "s3", "$", "$.content", "$.x[0]", "results.1", "args.path", "a.txt", "calculator"));
    case "integer":
      return fc.integer({ min: typeof schema.minimum === "number" ? schema.minimum : -5, max: typeof schema.maximum === "number" ? Math.min(schema.maximum, 1e6) : 100 });
    case "number":
      return fc.double({ min: typeof schema.minimum === "number" ? schema.minimum : -100, max: typeof schema.maximum === "number" ? schema.maximum : 100, noNaN: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    default:
      return fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));
  }
}

const RUNS = { numRuns: 300 };

/** A zod error as troupe sends it back: every issue with the field it is at, or — for one about the whole answer — naming the fields in its words. */
function namesTheField(error: z.ZodError, fields: readonly string[] = []): boolean {
  return error.issues.every((issue) => issue.path.length > 0 || /Unrecognized key|expected object/.test(issue.message) || fields.some((field) => new RegExp(`\\b${field}\\b`).test(issue.message)));
}

/** The words a plan error names its field with. */
const PLAN_FIELDS = /\b(?:agent|unknown tool|tools?\b|dependsOn|depends on|argument "[^"]*"|mapOver|capability|writes|reads|subtask id|cycle|no subtasks|subtasks|no agent may use)/;

describe("every schema sent to a model admits only answers troupe can take, or says which field is wrong", async () => {
  const agents = createAgentRegistry();
  const platform = await createToolPlatform({ config: resolveToolsConfig(undefined, { base: process.cwd() }), agents });
  const deps = { agents: platform.agents, tools: platform.tools };
  const schema = plannerSchema({ agents: platform.agents.list(), tools: platform.tools, maxSubtasks: 5 });
  const rules = { agents: platform.agents.names(), tools: platform.tools.names(), maxSubtasks: 5, profiles: agentProfiles(deps), files: fileTools(deps) };

  it("the plan: read and validated, or every error names its field (and the allowed values where it can)", () => {
    let valid = 0;
    fc.assert(
      fc.property(arbitraryOf(jsonSchemaOf(schema)), (answer) => {
        const read = readPlanAnswer(answer, schema, plannerReadContext({ agents: platform.agents.list(), tools: platform.tools }));
        if (!read.success) {
          expect(read.error).toMatch(/→ at |✖/);
          return;
        }
        const errors = validatePlan(read.data.subtasks, rules);
        if (errors.length === 0) valid += 1;
        for (const error of errors) expect(error, error).toMatch(PLAN_FIELDS);
      }),
      RUNS,
    );
    // Some generated plans are valid as they come: the schema does not only admit broken ones.
    expect(valid).toBeGreaterThan(0);
  });

  it("the review and the vote", () => {
    const review = reviewWireSchema(["s1", "s2"]);
    fc.assert(
      fc.property(arbitraryOf(jsonSchemaOf(review)), (answer) => {
        const parsed = review.safeParse(answer);
        if (!parsed.success) expect(namesTheField(parsed.error)).toBe(true);
      }),
      RUNS,
    );
    const vote = voteSchema(["yes", "no"]);
    fc.assert(
      fc.property(arbitraryOf(jsonSchemaOf(vote)), (answer) => {
        const parsed = vote.safeParse(answer);
        if (!parsed.success) expect(namesTheField(parsed.error)).toBe(true);
      }),
      RUNS,
    );
  });

  it("the worker's outcome: ends the subtask, or the problem names the field", () => {
    const values = { handles: new Map<string, unknown>([["results.1", { content: "x" }], ["args.path", "a.txt"]]), lost: new Set<string>(), summaries: new Map<string, string>() };
    fc.assert(
      fc.property(arbitraryOf(SUBMIT_RESULT_SPEC.function.parameters as Schema), (answer) => {
        const parsed = SubmittedResult.safeParse(answer);
        if (!parsed.success) {
          expect(namesTheField(parsed.error)).toBe(true);
          return;
        }
        const read = readSubmission(parsed.data, values);
        if ("problem" in read) expect(read.problem).toMatch(/\b(?:status|result|from|path|reason)\b/);
      }),
      RUNS,
    );
  });

  it("each built-in tool's parameters: the arguments validate, or the error names the field", () => {
    for (const name of platform.tools.names()) {
      const tool = platform.tools.get(name);
      if (!tool) continue;
      fc.assert(
        fc.property(arbitraryOf(platform.tools.spec(name).function.parameters as Schema), (args) => {
          const parsed = tool.schema.safeParse(args);
          const fields = Object.keys((platform.tools.spec(name).function.parameters as { properties?: object }).properties ?? {});
          if (!parsed.success) expect(namesTheField(parsed.error, fields), `${name}: ${z.prettifyError(parsed.error)}`).toBe(true);
        }),
        { numRuns: 100 },
      );
    }
    expect(platform.tools.names().length).toBeGreaterThanOrEqual(19);
  });
});
