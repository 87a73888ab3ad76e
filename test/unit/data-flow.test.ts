import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolError } from "../../src/core/errors.js";
import type { StoredEvent } from "../../src/core/events.js";
import { executionGraphMermaid } from "../../src/core/execution-graph.js";
import type { MappedExecutionReport } from "../../src/core/map-report.js";
import { parseSections, SECTIONS } from "../../src/core/prompt-protocol.js";
import { OfflineChatModel } from "../../src/providers/offline/offline-chat-model.js";
import { countMessageTokens } from "../../src/providers/token-count.js";
import type { ToolCallingCallOptions } from "../../src/providers/tool-calling-chat-model.js";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { createBuiltinRegistry } from "../../src/tools/builtin/index.js";
import { eventsOf, largeTextTool, tempDir } from "../helpers.js";

const USERS = [
  { id: "u1", name: "Ada", profile: { city: "London" } },
  { id: "u2", name: "Grace", profile: { city: "Arlington" } },
  { id: "u3", name: "Linus", profile: { city: "Helsinki" } },
];

/** Two tools a user would plug in: one lists the users, the other fetches a user's items and always fails for u2. */
function userTools(fetchCalls: string[]) {
  const registry = createBuiltinRegistry();
  registry.register(
    defineTool({
      name: "list_users",
      description: "List the users I follow",
      schema: z.object({}),
      permission: "READ",
      riskLevel: "low",
      idempotent: true,
      timeoutMs: 1_000,
      execute: async () => ({ users: USERS }),
      summarize: (value) => `${(value as { users: unknown[] }).users.length} users`,
    }),
  );
  registry.register(
    defineTool({
      name: "fetch_items",
      description: "Fetch a user's latest items",
      schema: z.object({ user: z.string(), limit: z.number().int().default(2) }),
      permission: "READ",
      riskLevel: "low",
      idempotent: true,
      timeoutMs: 1_000,
      execute: async ({ user, limit }) => {
        fetchCalls.push(user);
        if (user === "u2") throw new ToolError("fetch_failed", `the items service timed out for ${user}`);
        return { user, items: Array.from({ length: limit }, (_, index) => ({ title: `${user} item ${index + 1}` })) };
      },
    }),
  );
  return registry;
}

/** A scripted model that also keeps every prompt it was sent, to measure them. */
class RecordingModel extends ScriptedChatModel {
  readonly prompts: BaseMessage[][] = [];

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    this.prompts.push(messages);
    return super._generate(messages, options);
  }
}

async function createTroupe(steps: ScriptStep[], fields: { tools?: ReturnType<typeof createBuiltinRegistry>; offlineSynthesizer?: boolean } = {}) {
  const model = new RecordingModel({ steps });
  const directory = tempDir();
  const models = modelSetOf(model);
  if (fields.offlineSynthesizer) models.synthesizer = new OfflineChatModel({});
  const troupe = await Troupe.create({ models, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace"), tools: fields.tools });
  return { model, troupe, directory };
}

const argumentsOf = (text: string): Record<string, unknown> => JSON.parse(parseSections(text).get(SECTIONS.arguments) ?? "{}") as Record<string, unknown>;

describe("seed 004: list three users, fetch each one's items (one fetch fails), retry only the failure", () => {
  it("reports PARTIAL_SUCCESS 2/3, retries only u2 when the critic asks, and answers with what failed", async () => {
    const fetchCalls: string[] = [];
    const plan = planStep([
      subtask("A", "research", "List the users I follow", { tool: "list_users" }),
      subtask("B", "research", "Fetch each user's latest items", {
        tool: "fetch_items",
        dependsOn: ["A"],
        args: { user: { ref: "A", path: "$.users[*].id" }, limit: { value: 2 } },
        mapOver: "user",
      }),
      subtask("C", "execute", "Summarise the items per city", {
        dependsOn: ["A", "B"],
        args: {
          items: { ref: "B", path: "$.results[?(@.status=='success')].output.items[*].title" },
          cities: { ref: "A", path: "$.users[*].profile.city" },
        },
      }),
    ]);
    const { model, troupe } = await createTroupe(
      [
        plan,
        finalStep("C", "London and Helsinki have two items each.", { times: 2 }),
        reviewStep(0.5, { issues: ["B: the items of u2 could not be fetched"], redo: ["B"] }, { contains: '"overallStatus":"PARTIAL_SUCCESS"' }),
        reviewStep(0.8, { issues: [] }, { contains: "Review round\n2 of" }),
      ],
      { tools: userTools(fetchCalls), offlineSynthesizer: true },
    );
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "Get the latest items of everyone I follow" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("completed");

      // Only the failed item ran again: u1 and u3 once, u2 twice.
      expect(fetchCalls).toHaveLength(4);
      expect(fetchCalls.slice(0, 3).sort()).toEqual(["u1", "u2", "u3"]);
      expect(fetchCalls[3]).toBe("u2");
      expect(eventsOf(events, "map-item").map((event) => [event.index, event.status])).toEqual(
        expect.arrayContaining([
          [0, "success"],
          [1, "error"],
          [2, "success"],
        ]),
      );
      expect(eventsOf(events, "map-item")).toHaveLength(4);

      // The critic saw the partial failure, with the failed input and its error.
      const [firstReview] = model.callsFor("critic");
      expect(firstReview?.lastMessage).toContain('"input":"u2"');
      expect(firstReview?.lastMessage).toContain("fetch_failed: the items service timed out for u2");

      // The retry merged into the same report: still 2/3, in the list's order.
      const b = result.plan.find((view) => view.id === "B");
      expect(b).toMatchObject({ status: "done", attempts: 2, map: { overallStatus: "PARTIAL_SUCCESS", total: 3, succeeded: 2, failed: 1 } });
      const report = (await troupe.store.stash.get(b?.ref ?? "")) as MappedExecutionReport;
      expect(report.overallStatus).toBe("PARTIAL_SUCCESS");
      expect(report.results.map((item) => [item.status, item.input])).toEqual([
        ["success", "u1"],
        ["error", "u2"],
        ["success", "u3"],
      ]);
      expect(report.results[0]?.output).toEqual({ user: "u1", items: [{ title: "u1 item 1" }, { title: "u1 item 2" }] });

      // Downstream selection: the successful outputs' nested titles, and a nested field across the user list.
      const cCalls = model.callsFor("execute", "C");
      expect(cCalls).toHaveLength(2);
      expect(argumentsOf(cCalls[0]?.lastMessage ?? "")).toEqual({
        items: ["u1 item 1", "u1 item 2", "u3 item 1", "u3 item 2"],
        cities: ["London", "Arlington", "Helsinki"],
      });

      // The answer says what failed.
      expect(result.answer).toContain("2 of 3 items succeeded, 1 failed");
      expect(result.answer).toContain("u2: failed — fetch_failed: the items service timed out for u2");

      // Direct tool steps made no model call; the trace records their tool calls with the subtask's agent.
      expect(model.callsFor("research")).toHaveLength(0);
      expect(result.trace.toolCalls.filter((call) => call.tool === "fetch_items").every((call) => call.agent === "research")).toBe(true);

      // The state keeps handles and summaries, not the data.
      const state = (await troupe.graph.getState({ configurable: { thread_id: result.threadId } })).values as { results: Record<string, unknown> };
      expect(JSON.stringify(state.results)).not.toContain("u1 item 1");

      // The execution graph of the finished run, and its Mermaid.
      const view = await troupe.show(result.runId);
      expect(view.graph.nodes.map((node) => [node.id, node.status, node.tool])).toEqual([
        ["A", "SUCCESS", "list_users"],
        ["B", "PARTIAL_SUCCESS", "fetch_items"],
        ["C", "SUCCESS", null],
      ]);
      expect(view.graph.nodes[1]?.summary).toBe("2/3 items succeeded; failed: u2 (fetch_failed: the items service timed out for u2)");
      expect(view.graph.nodes[1]?.items).toEqual({ total: 3, succeeded: 2, failed: 1 });
      expect(view.graph.nodes.every((node) => typeof node.durationMs === "number")).toBe(true);
      expect(view.graph.edges).toEqual([
        { from: "A", to: "B", label: "user (each)" },
        { from: "A", to: "C", label: "cities" },
        { from: "B", to: "C", label: "items" },
      ]);
      const mermaid = executionGraphMermaid(view.graph);
      expect(mermaid).toContain('  n_A -->|"user (each)"| n_B');
      expect(mermaid).toMatch(/n_B\["B · research · fetch_items<br\/>Fetch each user's latest items<br\/>PARTIAL_SUCCESS · \d+ ms<br\/>2\/3 items succeeded; failed: u2/);
      expect(mermaid).toContain(":::partial_success");
    } finally {
      troupe.close();
    }
  });
});

describe("references", () => {
  it("sends a plan with bad references back to the planner with the errors, and runs the repaired plan", async () => {
    const { model, troupe } = await createTroupe([
      planStep([
        subtask("s1", "research", "Find the users"),
        subtask("s2", "execute", "Greet them", { dependsOn: ["s1"], args: { names: { ref: "s1", path: "$.users[?(@.name==)]" }, who: { ref: "s7", path: "$" } } }),
        subtask("s3", "execute", "Count them", { args: { n: { ref: "s1", path: "$.users" } }, mapOver: "missing" }),
      ]),
      planStep([subtask("s1", "research", "Find the users"), subtask("s2", "execute", "Greet them", { dependsOn: ["s1"], args: { names: { ref: "s1", path: "$.users[*].name" } } })], {
        contains: "refers to \"s7\", which is not in the plan",
      }),
      finalStep("s1", '{"users": [{"name": "Ada"}, {"name": "Linus"}]}'),
      finalStep("s2", "Hello Ada and Linus", { contains: '"Ada"' }),
      reviewStep(0.9),
      answerStep("Greeted."),
    ]);
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "greet the users" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("completed");
      const [invalid] = eventsOf(events, "plan-invalid");
      expect(invalid?.errors).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^subtask s2: argument "names" has path "\$\.users\[\?\(@\.name==\)\]"; the filter .* does not parse/),
          'subtask s2: argument "who" refers to "s7", which is not in the plan (its ref may name: s1, s3)',
          'subtask s3: argument "n" refers to "s1", which is not in its dependsOn (add "s1" to dependsOn)',
          'subtask s3: mapOver names "missing", which is not one of its args (n)',
        ]),
      );
      expect(argumentsOf(model.callsFor("execute", "s2")[0]?.lastMessage ?? "")).toEqual({ names: ["Ada", "Linus"] });
    } finally {
      troupe.close();
    }
  });

  it("fails a mapped subtask whose list argument is not a list, naming what it found", async () => {
    const { model, troupe } = await createTroupe([
      planStep([subtask("s1", "research", "Find it"), subtask("s2", "research", "Do each", { dependsOn: ["s1"], args: { item: { ref: "s1", path: "$.items" } }, mapOver: "item" })]),
      finalStep("s1", '{"items": "not a list"}'),
      reviewStep(0.9),
      answerStep("no"),
    ]);
    try {
      const result = await troupe.run({ task: "do each item" });
      model.assertDone();
      expect(result.plan[1]).toMatchObject({ status: "failed", error: 'the argument "item" to map over is not a list: it is string: not a list' });
    } finally {
      troupe.close();
    }
  });
});

describe("the data stash and the prompt budget", () => {
  it("keeps a 2 MB result out of the state and the prompts, and still hands the whole value to a tool through its handle", async () => {
    const big = `${"line of data\n".repeat(160_000)}end`;
    const tools = createBuiltinRegistry().register(largeTextTool(big));
    const budget = 2_000;
    const { model, troupe, directory } = await createTroupe(
      [
        planStep([
          subtask("s1", "research", "Produce the data", { tool: "make_data" }),
          subtask("s2", "execute", "Save it to big.txt", { dependsOn: ["s1"], args: { content: { ref: "s1", path: "$" } } }),
        ]),
        toolStep("s2", "file_write", { path: "big.txt", content: { $stash: "args.content" } }, { contains: '"$stash":"args.content"' }),
        finalStep("s2", "saved"),
        reviewStep(0.9),
        answerStep("Saved."),
      ],
      { tools },
    );
    try {
      const result = await troupe.run({ task: "produce the data and save it", promptBudget: budget });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(readFileSync(path.join(directory, "workspace", "big.txt"), "utf8")).toBe(big);
      expect(result.plan[0]?.bytes).toBe(Buffer.byteLength(JSON.stringify(big)));
      for (const prompt of model.prompts) expect(await countMessageTokens(prompt)).toBeLessThanOrEqual(budget);
      const state = (await troupe.graph.getState({ configurable: { thread_id: result.threadId } })).values;
      expect(JSON.stringify(state).length).toBeLessThan(20_000);
      const handleText = argumentsOf(model.callsFor("execute", "s2")[0]?.lastMessage ?? "").content as Record<string, unknown>;
      expect(handleText).toMatchObject({ $stash: "args.content", bytes: Buffer.byteLength(big), shape: "string" });
    } finally {
      troupe.close();
    }
  });
});

describe("the offline model", () => {
  it('plans "for each of the files in data/, count the lines" as a map and answers with every count', async () => {
    const directory = tempDir();
    const workspace = path.join(directory, "workspace");
    mkdirSync(path.join(workspace, "data", "sub"), { recursive: true });
    writeFileSync(path.join(workspace, "data", "a.txt"), "one\ntwo\nthree\n");
    writeFileSync(path.join(workspace, "data", "b.md"), "single line without newline");
    writeFileSync(path.join(workspace, "data", "c.csv"), "x,y\n1,2\n");
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace });
    try {
      const result = await troupe.run({ task: "for each of the files in data/, count the lines" });
      expect(result.status).toBe("completed");
      expect(result.plan.map((view) => [view.id, view.tool, view.mapOver, view.status])).toEqual([
        ["s1", "file_list", undefined, "done"],
        ["s2", undefined, "path", "done"],
      ]);
      expect(result.plan[1]?.map).toMatchObject({ overallStatus: "ALL_SUCCESS", total: 3, succeeded: 3 });
      expect(result.answer).toContain("3 of 3 items succeeded");
      for (const line of ["data/a.txt: 3", "data/b.md: 1", "data/c.csv: 2"]) expect(result.answer).toContain(line);
      expect(result.answer).not.toContain("data/sub:");
    } finally {
      troupe.close();
    }
  });
});
