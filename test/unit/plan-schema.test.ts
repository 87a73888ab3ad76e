import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createAgentRegistry } from "../../src/agents/index.js";
import { UsageMeter } from "../../src/agents/model-call.js";
import { runPlanner } from "../../src/agents/planner.js";
import type { TroupeConfig } from "../../src/config/config-file.js";
import { parseEnv } from "../../src/config/env.js";
import { createProviderRegistry, routeFor } from "../../src/providers/registry.js";
import { createBuiltinRegistry } from "../../src/tools/builtin/index.js";
import { SchemaFollowingChatModel } from "../../src/testing/schema-following-chat-model.js";
import type { FakeRequest } from "../../src/testing/fake-server.js";
import { eventsOf } from "../helpers.js";
import { envFor, fakeAnthropic, fakeOpenAI, runOnProvider, WORKER_TASK } from "../provider-helpers.js";

const TASK = "compute 17% of 2,340 and save it to result.txt";
/** The agents runOnProvider registers: the built-in workers and its `payments` agent. */
const AGENTS = ["research", "code", "execute", "memory", "cleanup", "payments"];

type Schema = Record<string, unknown>;

/** Every subschema of a JSON schema, depth first. */
function nodesOf(schema: Schema): Schema[] {
  const children: unknown[] = [
    ...Object.values((schema.properties ?? {}) as Record<string, unknown>),
    schema.items,
    ...((schema.anyOf ?? []) as unknown[]),
  ];
  return [schema, ...children.filter((child): child is Schema => typeof child === "object" && child !== null).flatMap(nodesOf)];
}

/** The strict-mode rules every object of a schema (`objects` of them) must keep. */
function expectStrictShape(schema: Schema, objects: number): void {
  const found = nodesOf(schema).filter((node) => node.type === "object");
  expect(found).toHaveLength(objects);
  for (const node of found) {
    expect(node.additionalProperties).toBe(false);
    expect([...((node.required ?? []) as string[])].sort()).toEqual(Object.keys((node.properties ?? {}) as object).sort());
  }
  for (const node of nodesOf(schema)) {
    expect(Array.isArray(node.type), "nullable types are anyOf branches").toBe(false);
    expect(node).not.toHaveProperty("default");
  }
}

/** The properties of a step shape of the plan's JSON wire: the full one (a worker's step, or a tool step with all its fields), or the tool step's. */
function stepSchema(schema: Schema, shape: "full" | "tool" = "full"): Record<string, Schema> {
  const steps = (schema.properties as Record<string, Schema>).steps as Schema;
  const shapes = ((steps.items as Schema).anyOf ?? []) as Schema[];
  const found = shapes.find((candidate) => ("agent" in ((candidate.properties ?? {}) as object)) === (shape === "full"));
  return (found?.properties ?? {}) as Record<string, Schema>;
}

/** Every object of the plan's JSON wire: the plan, its two step shapes, and each one's five argument shapes. */
const PLAN_OBJECTS = 13;
/** The JSON plan wire, asked for by the config (OpenAI and Anthropic plan on the compact wire by default). */
const JSON_PLAN = { planWire: "json" as const };

function enumOf(property: Schema): unknown[] {
  if (Array.isArray(property.enum)) return property.enum;
  return ((property.anyOf ?? []) as Schema[]).flatMap((branch) => (branch.type === "null" ? [null] : ((branch.enum ?? []) as unknown[])));
}

/** The JSON schema an OpenAI-wire request carried for its structured answer, and whether it asked for strict mode. */
function openAISchema(request: FakeRequest | undefined): { schema: Schema; strict: unknown } {
  const body = request?.body ?? {};
  const format = body.response_format as { json_schema?: { schema: Schema; strict?: unknown } } | undefined;
  if (format?.json_schema) return { schema: format.json_schema.schema, strict: format.json_schema.strict };
  const tool = (body.tools as Array<{ function: { parameters: Schema; strict?: unknown } }>)[0];
  return { schema: tool?.function.parameters ?? {}, strict: tool?.function.strict };
}

function anthropicTool(request: FakeRequest | undefined): { input_schema: Schema; strict?: unknown } {
  return (request?.body.tools as Array<{ input_schema: Schema; strict?: unknown }>)[0] as { input_schema: Schema; strict?: unknown };
}

describe("the plan and review schemas sent to providers", () => {
  it("openai on the JSON plan wire: strict JSON schema, agent and tool as enums of the registered names, redo as an enum of the plan's ids", async () => {
    const openai = await fakeOpenAI();
    const config: TroupeConfig = { providers: { openai: JSON_PLAN } };
    const { result, troupe } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai:gpt-4o-mini" }), { task: WORKER_TASK }, { config });
    expect(result.status).toBe("completed");
    const plan = openAISchema(openai.requestsFor("planner")[0]);
    expect(plan.strict).toBe(true);
    expectStrictShape(plan.schema, PLAN_OBJECTS);
    const subtask = stepSchema(plan.schema);
    expect(enumOf(subtask.agent as Schema)).toEqual(AGENTS);
    expect(enumOf(subtask.tool as Schema)).toEqual([...troupe.tools.names(), null]);
    expect(enumOf(stepSchema(plan.schema, "tool").tool as Schema)).toEqual(troupe.tools.names());
    expect((plan.schema.properties as Record<string, Schema>).steps?.maxItems).toBe(50);
    expect(Object.keys(subtask).sort()).toEqual(["after", "agent", "args", "capability", "do", "id", "reads", "tool", "tools", "writes"]);
    expect(Object.keys(stepSchema(plan.schema, "tool")).sort()).toEqual(["args", "id", "tool"]);
    // An argument is one of five closed shapes, each with only its fields; the map is the argument it runs over.
    expect((((subtask.args as Schema).items as Schema).anyOf as Schema[]).map((shape) => shape.required)).toEqual([["name", "value"], ["name", "items"], ["name", "ref", "path"], ["name", "each", "path"], ["name", "ref", "path", "format"]]);
    // The tools a worker needs: an enum of the same names; the capability: an enum of the agents' capabilities.
    expect(((((subtask.tools as Schema).anyOf as Schema[])[0] as Schema).items as Schema).enum).toEqual(troupe.tools.names());
    expect(enumOf(subtask.capability as Schema)).toEqual([...troupe.agents.capabilities(), null]);

    const review = openAISchema(openai.requestsFor("critic")[0]);
    expect(review.strict).toBe(true);
    expectStrictShape(review.schema, 2);
    const redo = (review.schema.properties as Record<string, Schema>).redo as Schema;
    expect((redo.items as Schema).enum).toEqual(result.plan.map((subtask) => subtask.id));
    expect(result.plan.map((subtask) => subtask.id)).toEqual(["s1", "s2", "s3"]);
  });

  it("openai with function calling: the forced tool's parameters are strict", async () => {
    const openai = await fakeOpenAI();
    const config: TroupeConfig = { providers: { openai: { structuredOutput: "functionCalling", ...JSON_PLAN } } };
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: TASK }, { config });
    expect(result.status).toBe("completed");
    expect(openai.requestsFor("planner")[0]?.structured).toBe("tool");
    const plan = openAISchema(openai.requestsFor("planner")[0]);
    expect(plan.strict).toBe(true);
    expect(enumOf(stepSchema(plan.schema).agent as Schema)).toEqual(AGENTS);
  });

  it("strict: false in the config sends the same enums without asking for strict mode", async () => {
    const openai = await fakeOpenAI();
    const config: TroupeConfig = { providers: { openai: { strict: false, ...JSON_PLAN } } };
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: TASK }, { config });
    expect(result.status).toBe("completed");
    const plan = openAISchema(openai.requestsFor("planner")[0]);
    expect(plan.strict).toBeUndefined();
    expect(enumOf(stepSchema(plan.schema).agent as Schema)).toEqual(AGENTS);
  });

  it("a run's tools narrow the tool enum to those it may use", async () => {
    const openai = await fakeOpenAI();
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: TASK, tools: ["calculator", "file_write"] }, { config: { providers: { openai: JSON_PLAN } } });
    expect(result.status).toBe("completed");
    expect(enumOf(stepSchema(openAISchema(openai.requestsFor("planner")[0]).schema).tool as Schema)).toEqual(["calculator", "file_write", null]);
  });

  it("openai-compatible: a forced tool without strict by default; strict with the JSON-schema response format", async () => {
    const server = await fakeOpenAI();
    const { result } = await runOnProvider(envFor({ openai: server }, { TROUPE_PROVIDER: "openai-compatible:qwen2.5-7b-instruct" }), { task: TASK });
    expect(result.status).toBe("completed");
    const forced = openAISchema(server.requestsFor("planner")[0]);
    expect(forced.strict).toBeUndefined();
    expect(enumOf(stepSchema(forced.schema).agent as Schema)).toEqual(AGENTS);

    const jsonServer = await fakeOpenAI();
    const config: TroupeConfig = { providers: { "openai-compatible": { structuredOutput: "jsonSchema" } } };
    const second = await runOnProvider(envFor({ openai: jsonServer }, { TROUPE_PROVIDER: "openai-compatible:qwen2.5-7b-instruct" }), { task: TASK }, { config });
    expect(second.result.status).toBe("completed");
    expect(jsonServer.requestsFor("planner")[0]?.structured).toBe("json_schema");
    expect(openAISchema(jsonServer.requestsFor("planner")[0]).strict).toBe(true);
  });

  it("anthropic: a strict tool whose input schema carries the enums, with the bounds strict tools refuse moved into descriptions", async () => {
    const anthropic = await fakeAnthropic();
    const { result } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic" }), { task: WORKER_TASK }, { config: { providers: { anthropic: JSON_PLAN } } });
    expect(result.status).toBe("completed");
    const plan = anthropicTool(anthropic.requestsFor("planner")[0]);
    expect(plan.strict).toBe(true);
    expectStrictShape(plan.input_schema, PLAN_OBJECTS);
    const subtask = stepSchema(plan.input_schema);
    expect(enumOf(subtask.agent as Schema)).toEqual(AGENTS);
    expect(enumOf(subtask.tool as Schema)).toContain("calculator");
    const subtasks = (plan.input_schema.properties as Record<string, Schema>).steps as Schema;
    expect(subtasks).not.toHaveProperty("maxItems");
    expect(subtasks.description).toContain("at most 50 items");

    const review = anthropicTool(anthropic.requestsFor("critic")[0]);
    expect(review.strict).toBe(true);
    const scores = ((review.input_schema.properties as Record<string, Schema>).scores as Schema).properties as Record<string, Schema>;
    expect(scores.accuracy).not.toHaveProperty("minimum");
    expect(scores.accuracy?.description).toContain("at most 1");
    expect((((review.input_schema.properties as Record<string, Schema>).redo as Schema).items as Schema).enum).toEqual(["s1", "s2", "s3"]);
  });

  it("anthropic with strict: false keeps the bounds and sends no strict flag", async () => {
    const anthropic = await fakeAnthropic();
    const config: TroupeConfig = { providers: { anthropic: { strict: false, ...JSON_PLAN } } };
    const { result } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic" }), { task: TASK }, { config });
    expect(result.status).toBe("completed");
    const plan = anthropicTool(anthropic.requestsFor("planner")[0]);
    expect(plan).not.toHaveProperty("strict");
    expect(((plan.input_schema.properties as Record<string, Schema>).steps as Schema).maxItems).toBe(50);
  });
});

describe("ollama", () => {
  it("sends the plan schema with its enums as the JSON-schema format, and reads the wire answer into the internal plan", async () => {
    const bodies: Array<Record<string, unknown>> = [];
    const answer = { steps: [{ id: "s1", agent: "execute", do: "Count the lines of notes.txt", tool: "text_stats", args: [{ name: "path", value: "notes.txt" }], tools: null, after: [], reads: ["notes.txt"], writes: [], capability: null }], answer: "notes.txt has {s1.lines} lines", question: null };
    // Ollama's /api/chat, streamed as NDJSON the way the ollama client reads it.
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>);
        const at = new Date().toISOString();
        response.writeHead(200, { "content-type": "application/x-ndjson" });
        response.write(`${JSON.stringify({ model: "llama3.1", created_at: at, message: { role: "assistant", content: JSON.stringify(answer) }, done: false })}\n`);
        response.end(`${JSON.stringify({ model: "llama3.1", created_at: at, message: { role: "assistant", content: "" }, done: true, done_reason: "stop", prompt_eval_count: 10, eval_count: 5 })}\n`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
      const models = createProviderRegistry().createModelSet({ provider: "ollama", model: "llama3.1" }, parseEnv({ OLLAMA_HOST: host }));
      const agents = createAgentRegistry().list();
      const tools = createBuiltinRegistry();
      const plan = await runPlanner(
        { model: routeFor(models, "planner"), task: "count the lines of notes.txt", agents, tools, feedback: [], errors: [], humanAnswers: [], maxSubtasks: 50 },
        { meter: new UsageMeter() },
      );
      expect(plan).toEqual({ subtasks: [{ id: "s1", label: "Count the lines of notes.txt", agent: "execute", dependsOn: [], args: { path: { value: "notes.txt" } }, tool: "text_stats", reads: ["notes.txt"] }], answer: "notes.txt has {s1.lines} lines" });
      const format = bodies[0]?.format as Schema;
      expectStrictShape(format, PLAN_OBJECTS);
      const subtask = stepSchema(format);
      expect(enumOf(subtask.agent as Schema)).toEqual(agents.map((agent) => agent.name));
      expect(enumOf(subtask.tool as Schema)).toEqual([...tools.names(), null]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("a server that answers from the request's own JSON schema", () => {
  it.each([
    ["openai-compatible", "openai-compatible:generic-7b"],
    ["openai", "openai:gpt-4o-mini"],
  ])("%s: the plan is valid on the first attempt, because the schema names the agents", async (_name, provider) => {
    const brain = new SchemaFollowingChatModel({});
    const server = await fakeOpenAI(brain);
    const { result, events } = await runOnProvider(envFor({ openai: server }, { TROUPE_PROVIDER: provider }), { task: "summarise the notes" }, { config: { providers: { openai: JSON_PLAN } } });
    expect(eventsOf(events, "plan-invalid")).toEqual([]);
    expect(server.requestsFor("planner")).toHaveLength(1);
    expect(result.status).toBe("completed");
    expect(result.plan.map(({ id, agent, tool, args }) => ({ id, agent, tool, args }))).toEqual([{ id: "ok id", agent: "research", tool: undefined, args: { "ok name": { value: null } } }]);
    // The brain read the enums from the wire: the first agent, and the redo ids of the plan. Its
    // worker answered in plain text, so the worker asked for the outcome through structured output.
    expect(brain.calls.map((call) => call.name)).toEqual(["submit_plan", "submit_result", "submit_review"]);
  });

  it("anthropic: the same through a strict forced tool", async () => {
    const brain = new SchemaFollowingChatModel({});
    const anthropic = await fakeAnthropic(brain);
    const { result, events } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic" }), { task: "summarise the notes" }, { config: { providers: { anthropic: JSON_PLAN } } });
    expect(eventsOf(events, "plan-invalid")).toEqual([]);
    expect(result.status).toBe("completed");
    expect(result.plan[0]?.agent).toBe("research");
  });
});

describe("a careless server that fills every field the schema allows", () => {
  it("can no longer write an argument with both a value and a ref, nor map over a name that is no argument; what is left is refused naming the field", async () => {
    const server = await fakeOpenAI(SchemaFollowingChatModel.filling("everything"));
    const { result, events } = await runOnProvider(envFor({ openai: server }, { TROUPE_PROVIDER: "openai-compatible:generic-7b" }), { task: "summarise the notes" });
    expect(result.status).toBe("failed");
    const errors = eventsOf(events, "plan-invalid").flatMap((event) => event.errors);
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) {
      expect(error).not.toMatch(/both a value and a ref|mapOver/);
      expect(error).toMatch(/dependsOn|depends on|agent "|argument "|writes|reads/);
    }
  });
});
