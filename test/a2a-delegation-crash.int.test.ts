import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { answerStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { serveProcess, tempDir, writeScript } from "./helpers.js";
import { waitFor } from "./wait.js";

const TRICKY = "\uFEFFhéllo wörld\r\n\tindented  \u0000 end  \n";

async function api<T>(url: string, init: { method?: string; body?: unknown; key?: string } = {}): Promise<T> {
  const response = await fetch(url, {
    method: init.method ?? "GET",
    headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...(init.key ? { authorization: `Bearer ${init.key}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  return ((await response.json()) as { data: T }).data;
}

/** Waits on `check`, a failed read (the server restarting) counting as not yet. */
const until = <T>(check: () => Promise<T | undefined>, what: string): Promise<T> => waitFor(() => check().catch(() => undefined), what, 100);

/** Rows of the delegating server's database, read while it may be running (or dead). */
function rows<T>(directory: string, sql: string): T[] {
  const db = new Database(path.join(directory, ".troupe", "troupe.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

describe("two troupe servers, one delegating a subtask to the other over A2A", () => {
  it("a SIGKILL of the delegating server mid-call: after the restart it waits on the same remote task, and no second task is made", async () => {
    const remoteDir = tempDir();
    const remoteScript = writeScript(remoteDir, "remote.json", [
      planStep([subtask("s1", "execute", "Write it", { tool: "file_write", args: { path: { value: "tricky.txt" }, content: { value: TRICKY } } })], { delayMs: 3_000 }),
      reviewStep(1),
      answerStep("wrote tricky.txt"),
    ]);
    const remote = await serveProcess(remoteDir, { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: remoteScript, TROUPE_API_KEYS: "delegator:remote-secret" });
    const localDir = tempDir();
    writeFileSync(
      path.join(localDir, "troupe.config.json"),
      JSON.stringify({
        agents: [{ name: "helper", a2a: `${remote.url}/.well-known/agent-card.json`, apiKeyEnv: "HELPER_KEY", capabilities: ["write-files"] }],
        tools: { fetch: { allowAddresses: ["127.0.0.1/32"] } },
      }),
    );
    const localScript = writeScript(localDir, "local.json", [
      planStep([
        subtask("r1", "helper", "write the tricky file"),
        subtask("s2", "execute", "Keep a copy", { tool: "file_write", dependsOn: ["r1"], args: { path: { value: "copy.txt" }, content: { ref: "r1", path: "$.files[0].content" } } }),
      ]),
      reviewStep(1),
      answerStep("copied the helper's file"),
    ]);
    const env = { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: localScript, HELPER_KEY: "remote-secret" };
    let local = await serveProcess(localDir, env);
    try {
      const { task_id: taskId } = await api<{ task_id: string }>(`${local.url}/api/v1/execute`, { method: "POST", body: { task: "get the tricky file from the helper" } });
      // The remote agent has the task, and the delegating server has kept its id: now it dies mid-call.
      await until(async () => ((await api<{ total: number }>(`${remote.url}/api/v1/tasks`, { key: "remote-secret" })).total === 1 ? true : undefined), "the remote task");
      await until(async () => (rows(localDir, "SELECT task_id FROM remote_tasks").length === 1 ? true : undefined), "the remote task's id to be kept");
      local.child.kill("SIGKILL");
      expect((await local.exited).signal).toBe("SIGKILL");
      local = await serveProcess(localDir, env);
      const done = await until(async () => {
        const view = await api<{ status: string; result: { answer: string } | null }>(`${local.url}/api/v1/tasks/${taskId}`);
        return view.status === "completed" || view.status === "failed" ? view : undefined;
      }, "the delegating task to finish");
      expect(done).toMatchObject({ status: "completed", result: { answer: "copied the helper's file" } });
      // No duplicate: the remote agent made one task, and it ran once.
      const remoteTasks = await api<{ total: number; items: Array<{ status: string }> }>(`${remote.url}/api/v1/tasks`, { key: "remote-secret" });
      expect(remoteTasks.total).toBe(1);
      expect(remoteTasks.items[0]?.status).toBe("completed");
      expect(readFileSync(path.join(localDir, "workspace", "copy.txt")).equals(Buffer.from(TRICKY))).toBe(true);
      // One call in the audit trail: begun by the killed process, finished by the next on the same row.
      const audit = rows<{ status: string; reason: string | null }>(localDir, "SELECT status, reason FROM audit WHERE tool = 'a2a.helper'");
      expect(audit).toEqual([{ status: "ok", reason: expect.stringMatching(/run again after a crash/) }]);
    } finally {
      local.child.kill("SIGTERM");
      remote.child.kill("SIGTERM");
      await Promise.all([local.exited, remote.exited]);
    }
  });
});
