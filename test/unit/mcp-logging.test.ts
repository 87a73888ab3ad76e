import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type LoggingMessageNotification, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { listen, mcpClient, structured } from "../protocol-helpers.js";
import { makeApp } from "../server-helpers.js";

const README_TASK = "compute 17% of 2,340 and save it to result.txt";

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
});

type Log = LoggingMessageNotification["params"] & { data: { run_id: string; event?: string; seq?: number; message: string } };

/** A client of the app that keeps every log message it hears. */
async function logged(base: string): Promise<{ client: Client; logs: Log[] }> {
  const client = await mcpClient(base);
  clients.push(client);
  const logs: Log[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(notification.params as Log);
  });
  return { client, logs };
}

async function runTask(client: Client, task = README_TASK): Promise<{ run_id: string; status: string }> {
  return structured<{ run_id: string; status: string }>(await client.callTool({ name: "run_task", arguments: { task } }));
}

describe("MCP logging: logging/setLevel, and a running task's progress as log messages", () => {
  it("tells a run's course at info by default, its inner workings at debug once asked, and nothing below the level set", async () => {
    const app = await makeApp();
    const { client, logs } = await logged(await listen(app));
    expect(client.getServerCapabilities()).toMatchObject({ logging: {} });

    const first = await runTask(client);
    expect(first.status).toBe("completed");
    // Sent during the call, on its own stream: all there when the result is.
    const messages = logs.map((log) => `${log.level} ${log.data.message}`);
    expect(messages).toEqual(
      expect.arrayContaining(["info run started", "info plan ready: 2 subtasks", expect.stringMatching(/^info s1 started \(execute\)/), expect.stringMatching(/^info s2 done/), "info run completed (completed)"]),
    );
    expect(logs.every((log) => log.logger === "troupe" && log.data.run_id === first.run_id)).toBe(true);
    expect(logs.map((log) => log.level)).not.toContain("debug");

    await client.setLoggingLevel("debug");
    logs.length = 0;
    const second = await runTask(client);
    expect(logs.filter((log) => log.level === "debug").map((log) => log.data.message)).toEqual(expect.arrayContaining([expect.stringMatching(/^s1: calculator ok in \d+ ms/), "step planner started"]));
    expect(logs.every((log) => log.data.run_id === second.run_id)).toBe(true);
    // Numbered by the run's events, in order.
    const seqs = logs.map((log) => log.data.seq ?? 0);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));

    await client.setLoggingLevel("error");
    logs.length = 0;
    expect((await runTask(client, "compute 2+3")).status).toBe("completed");
    expect(logs).toEqual([]);
  });

  it("a failed run is logged at error, a failed subtask at warning", async () => {
    const app = await makeApp();
    const { client, logs } = await logged(await listen(app));
    // The offline model reads the file, which is not there: the subtask fails, and the run with it.
    const outcome = await runTask(client, "read the file missing.txt");
    expect(outcome.status).toBe("failed");
    expect(logs.filter((log) => log.level === "warning").map((log) => log.data.message)).toEqual(expect.arrayContaining([expect.stringMatching(/^s1 failed/)]));
    expect(logs.filter((log) => log.level === "error").map((log) => log.data.message)).toEqual(["run failed (failed)"]);
  });

  it("refuses a level that is not one, and outlasts a flood of setLevel: one level per session, each session its own", async () => {
    const app = await makeApp();
    const base = await listen(app);
    const { client, logs } = await logged(base);
    await expect(client.request({ method: "logging/setLevel", params: { level: "loud" } }, (await import("@modelcontextprotocol/sdk/types.js")).EmptyResultSchema)).rejects.toMatchObject({ code: -32602 });
    const levels = ["debug", "info", "warning", "error", "critical"] as const;
    const answers = await Promise.all(Array.from({ length: 500 }, (_, index) => client.setLoggingLevel(levels[index % levels.length] as (typeof levels)[number])));
    expect(answers.every((answer) => Object.keys(answer).length === 0)).toBe(true);
    await client.setLoggingLevel("emergency");
    // Another session's level is its own.
    const other = await logged(base);
    await other.client.setLoggingLevel("debug");
    await runTask(client, "compute 2+3");
    await runTask(other.client, "compute 2+3");
    expect(logs).toEqual([]);
    expect(other.logs.map((log) => log.level)).toContain("debug");
  });
});
