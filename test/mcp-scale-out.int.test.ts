/**
 * MCP on Postgres with the run driven by another process: an API-only `troupe serve` and a
 * `troupe worker`; the MCP SDK's client talks to the API process, which runs nothing. A run's
 * resource subscription and a tool call's log messages follow the run through the store's
 * notifications.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type LoggingMessageNotification, LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { answerStep, planStep, subtask } from "../src/testing/script.js";
import { readScriptLog, tempDir, writeScript } from "./helpers.js";
import { freshDatabase } from "./postgres.js";
import { mcpClient, structured } from "./protocol-helpers.js";
import { serveApi, startWorker, stopAll, taskStatus, until } from "./scale-out-helpers.js";

afterEach(stopAll);

const save = (tag: string, delayMs: number) =>
  planStep([subtask("s1", "execute", "Save the word", { tool: "file_write", args: { path: { value: `${tag}.txt` }, content: { value: `written for ${tag}` } } })], { contains: `[${tag}]`, delayMs });

describe("MCP with the run driven by a worker process (Postgres)", () => {
  it("a subscribed run's resource tells its changes, and run_task logs its events, while another process drives it", async () => {
    const directory = tempDir("troupe-mcp-scale-");
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace);
    const log = path.join(directory, "calls.jsonl");
    const env = {
      TROUPE_DATABASE_URL: await freshDatabase("mcp_scale"),
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "script.json", [save("watched", 0), save("logged", 0), answerStep("saved", { times: 2 })]),
      TROUPE_SCRIPT_LOG: log,
      TROUPE_WORKSPACE: workspace,
    };
    const api = await serveApi(directory, env);
    const worker = await startWorker(directory, env, 2);
    const client = await mcpClient(api.url);
    try {
      // A run resting on its plan's approval, then subscribed to, then approved: the worker drives the rest.
      const started = structured<{ run_id: string; status: string }>(await client.callTool({ name: "run_task", arguments: { task: "save a word [watched]", approve_plan: true } }));
      expect(started.status).toBe("interrupted");
      const uri = `troupe://runs/${started.run_id}`;
      const statuses: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (notification) => {
        if (notification.params.uri !== uri) return;
        const read = await client.readResource({ uri });
        statuses.push((JSON.parse((read.contents[0] as { text: string }).text) as { status: string }).status);
      });
      await client.subscribeResource({ uri });
      const resumed = await fetch(`${api.url}/api/v1/tasks/${started.run_id}/resume`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ decision: "approve" }) });
      expect(resumed.status).toBe(202);
      await until(async () => ((await taskStatus(api.url, started.run_id)) === "completed" ? true : undefined), "the run to complete");
      await until(() => (statuses.at(-1) === "completed" ? true : undefined), "a notification after which the run reads completed");

      const logs: Array<LoggingMessageNotification["params"]> = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void logs.push(notification.params));
      const logged = structured<{ status: string }>(await client.callTool({ name: "run_task", arguments: { task: "save a word [logged]" } }));
      expect(logged.status).toBe("completed");
      expect(logs.map((entry) => (entry.data as { message: string }).message)).toEqual(expect.arrayContaining(["run started", "plan ready: 1 subtask", expect.stringMatching(/^s1 done/), "run completed (completed)"]));
      // Both runs were planned by the worker, never by the API process.
      const planners = readScriptLog(log).filter((line) => line.role === "planner" && line.phase === "start");
      expect(new Set(planners.map((line) => line.pid))).toEqual(new Set([worker.pid]));
    } finally {
      await client.close();
    }
  });
});
