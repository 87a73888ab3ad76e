import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { TroupeConfig } from "../../src/config/config-file.js";
import { listen, mcpClient, structured } from "../protocol-helpers.js";
import { makeApp } from "../server-helpers.js";

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
});

async function connect(base: string, key?: string): Promise<Client> {
  const client = await mcpClient(base, key ? { key } : {});
  clients.push(client);
  return client;
}

const config = TroupeConfig.parse({
  taskTemplates: [
    {
      name: "percent-of",
      title: "A percentage, saved",
      description: "Compute a percentage of an amount and save it to a file",
      task: "compute {{share}} of {{amount}} and save it to {{file}}",
      arguments: [
        { name: "share", description: "e.g. 17%", values: ["5%", "17%", "50%"] },
        { name: "amount", description: "the amount", maxLength: 40 },
        { name: "file", description: "where the result goes" },
      ],
      tools: ["calculator", "file_write"],
    },
    {
      name: "ask-agent",
      description: "A task for one agent, on a thread of yours",
      task: "{{agent}}: {{what}} (thread {{thread}})",
      arguments: [
        { name: "agent", complete: "agents" },
        { name: "what", maxLength: 5_000 },
        { name: "thread", complete: "threads", required: false },
      ],
    },
  ],
});

const values = async (client: Client, ref: { type: "ref/prompt"; name: string } | { type: "ref/resource"; uri: string }, name: string, value: string) =>
  (await client.complete({ ref, argument: { name, value } })).completion.values;

/** The task the prompt hands to run_task (after "Task: "). */
function taskOf(text: string): string {
  return text.slice(text.indexOf("Task: ") + "Task: ".length);
}

describe("MCP prompts: troupe's example tasks, `task`, and the config's task templates", () => {
  it("lists them with descriptions and arguments, and each hands its task to run_task", async () => {
    const app = await makeApp({ troupe: { config } });
    const client = await connect(await listen(app));
    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(["task", "example_planning", "example_tools", "example_code", "percent-of", "ask-agent"]);
    expect(prompts.every((prompt) => (prompt.description ?? "").length > 0)).toBe(true);
    expect(prompts.find((prompt) => prompt.name === "percent-of")?.arguments).toEqual([
      { name: "share", description: "e.g. 17%", required: true },
      { name: "amount", description: "the amount", required: true },
      { name: "file", description: "where the result goes", required: true },
    ]);

    const example = await client.getPrompt({ name: "example_tools" });
    const text = (example.messages[0]?.content as { text: string }).text;
    expect(text).toMatch(/^Use troupe's run_task tool for this task\./);
    expect(taskOf(text)).toBe("compute 17% of 2,340 and save it to result.txt");
    // What a host's model does with it: the example runs, offline.
    const ran = structured<{ status: string; answer: string }>(await client.callTool({ name: "run_task", arguments: { task: taskOf(text) } }));
    expect(ran.status).toBe("completed");
    expect(ran.answer).toContain("397.8");

    const filled = await client.getPrompt({ name: "percent-of", arguments: { share: "50%", amount: "80", file: "half.txt" } });
    const filledText = (filled.messages[0]?.content as { text: string }).text;
    expect(taskOf(filledText)).toBe("compute 50% of 80 and save it to half.txt");
    expect(filledText).toContain("with only these tools: calculator, file_write (tools)");
    const general = await client.getPrompt({ name: "task", arguments: { task: "compute 2+3", thread_id: "t-1", tools: "calculator, file_write," } });
    expect((general.messages[0]?.content as { text: string }).text).toMatch(/on the thread "t-1" \(thread_id\).*with only these tools: calculator, file_write \(tools\)/);
  });

  it("refuses arguments that do not fit, as invalid params", async () => {
    const app = await makeApp({ troupe: { config } });
    const client = await connect(await listen(app));
    await expect(client.getPrompt({ name: "percent-of", arguments: { share: "99%", amount: "80", file: "x.txt" } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: "percent-of", arguments: { share: "5%", file: "x.txt" } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: "percent-of", arguments: { share: "5%", amount: "9".repeat(41), file: "x.txt" } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: "ask-agent", arguments: { agent: "research", what: "x".repeat(4_990) } })).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/task_too_long: the template "ask-agent" made a task of/) });
    await expect(client.getPrompt({ name: "task", arguments: { task: "   " } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.getPrompt({ name: "no-such-prompt" })).rejects.toMatchObject({ code: -32602 });
  });

  it("a template naming a tool troupe does not have stops troupe at start, naming the template", async () => {
    const broken = TroupeConfig.parse({ taskTemplates: [{ name: "typo", description: "d", task: "read the notes", tools: ["file_reed"] }] });
    await expect(makeApp({ troupe: { config: broken } })).rejects.toThrow(/taskTemplates\.0 \(typo\): unknown tool file_reed/);
  });
});

describe("MCP completions: where troupe knows the values", () => {
  it("completes thread and run ids of the caller's key only, agents, tools and a template's values", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:alice-key,bob:bob-key" }, troupe: { config } });
    const base = await listen(app);
    const alice = await connect(base, "alice-key");
    const bob = await connect(base, "bob-key");
    expect(alice.getServerCapabilities()).toMatchObject({ completions: {}, prompts: {} });
    const runs: Record<string, string> = {};
    for (const [client, thread] of [
      [alice, "plans-alice"],
      [alice, "notes-alice"],
      [bob, "plans-bob"],
    ] as const) {
      runs[thread] = structured<{ run_id: string }>(await client.callTool({ name: "run_task", arguments: { task: "compute 2+3", thread_id: thread } })).run_id;
    }
    const taskPrompt = { type: "ref/prompt", name: "task" } as const;
    expect(await values(alice, taskPrompt, "thread_id", "")).toEqual(["notes-alice", "plans-alice"]);
    expect(await values(alice, taskPrompt, "thread_id", "plans")).toEqual(["plans-alice"]);
    expect(await values(alice, taskPrompt, "thread_id", "PLANS-A")).toEqual(["plans-alice"]);
    expect(await values(bob, taskPrompt, "thread_id", "")).toEqual(["plans-bob"]);
    expect(await values(bob, { type: "ref/prompt", name: "ask-agent" }, "thread", "notes")).toEqual([]);
    expect(await values(alice, { type: "ref/resource", uri: "troupe://threads/{thread_id}" }, "thread_id", "n")).toEqual(["notes-alice"]);
    expect(await values(alice, { type: "ref/resource", uri: "troupe://runs/{id}" }, "id", "")).toEqual([runs["notes-alice"], runs["plans-alice"]]);
    expect(await values(bob, { type: "ref/resource", uri: "troupe://runs/{id}/graph" }, "id", "run-")).toEqual([runs["plans-bob"]]);

    expect(await values(alice, { type: "ref/resource", uri: "troupe://agents/{name}" }, "name", "re")).toEqual(["research"]);
    expect(await values(alice, { type: "ref/prompt", name: "ask-agent" }, "agent", "")).toEqual(app.troupe.agents.names());
    expect(await values(alice, taskPrompt, "tools", "calc")).toEqual(["calculator"]);
    expect(await values(alice, taskPrompt, "tools", "calculator, file_r")).toEqual(["calculator, file_read"]);
    expect(await values(alice, taskPrompt, "tools", "calculator,")).not.toContain("calculator, calculator");
    expect(await values(alice, { type: "ref/prompt", name: "percent-of" }, "share", "1")).toEqual(["17%"]);
    // Nothing to complete: an argument troupe knows no values of, an example without arguments.
    expect(await values(alice, taskPrompt, "task", "comp")).toEqual([]);
    expect(await values(alice, { type: "ref/prompt", name: "example_tools" }, "anything", "")).toEqual([]);
  });

  it("answers a huge prefix with nothing, an unknown prompt or template with invalid params, and goes on", async () => {
    const app = await makeApp();
    const client = await connect(await listen(app));
    await client.callTool({ name: "run_task", arguments: { task: "compute 2+3", thread_id: "a-thread" } });
    const taskPrompt = { type: "ref/prompt", name: "task" } as const;
    for (const prefix of ["a".repeat(200_000), "a-thread".repeat(40)]) expect(await values(client, taskPrompt, "thread_id", prefix)).toEqual([]);
    expect(await values(client, taskPrompt, "tools", ",".repeat(100_000))).toEqual([]);
    await expect(values(client, { type: "ref/prompt", name: "test_prompt_with_arguments" }, "arg1", "test")).rejects.toMatchObject({ code: -32602 });
    await expect(values(client, { type: "ref/resource", uri: "test://template/{id}" }, "id", "")).rejects.toMatchObject({ code: -32602 });
    expect(await values(client, taskPrompt, "thread_id", "a-")).toEqual(["a-thread"]);
  });
});
