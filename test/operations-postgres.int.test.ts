/**
 * Operating troupe over time on Postgres, in process: a fork (LangGraph's updateState on
 * PostgresSaver), webhook deliveries sent as pg-boss jobs, gc with its batched deletes and the
 * checkpoint blobs no checkpoint refers to any more.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { TroupeConfig } from "../src/config/config-file.js";
import { Troupe } from "../src/runtime/engine.js";
import { WebhookSender } from "../src/runtime/webhook-sender.js";
import type { PostgresStore } from "../src/store/postgres-store.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { tempDir } from "./helpers.js";
import { freshDatabase } from "./postgres.js";
import { until } from "./scale-out-helpers.js";

describe("operations over time on Postgres", () => {
  it("forks a run, sends its webhook as a pg-boss job, and collects both runs with their checkpoints", async () => {
    const received: string[] = [];
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        received.push(body);
        response.writeHead(received.length === 1 ? 503 : 200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    process.env.TROUPE_TEST_PG_SECRET = "pg-secret";
    const directory = tempDir();
    const model = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "execute", "First"), subtask("s2", "execute", "Second", { dependsOn: ["s1"], args: { x: { ref: "s1", path: "$" } } })]),
        finalStep("s1", "one"),
        finalStep("s2", "two"),
        reviewStep(0.9),
        answerStep("one, two"),
        finalStep("s2", "TWO", { contains: "one" }),
        reviewStep(0.9),
        answerStep("one, TWO"),
      ],
    });
    const troupe = await Troupe.create({
      models: modelSetOf(model),
      databaseUrl: await freshDatabase("operations"),
      dataDir: path.join(directory, "data"),
      workspace: path.join(directory, "ws"),
      config: TroupeConfig.parse({ webhooks: { secretEnv: "TROUPE_TEST_PG_SECRET", allowAddresses: ["127.0.0.1"], retryBaseMs: 50, retryMaxMs: 100 } }),
    });
    const sender = new WebhookSender({ store: troupe.store, config: troupe.config.webhooks });
    try {
      const original = await troupe.run({ task: "one then two", webhook: { url, events: ["completed"] } });
      expect(original.status).toBe("completed");
      const before = model.calls.length;
      const fork = await troupe.fork(original.runId, { from: "s2" });
      expect(fork.answer).toBe("one, TWO");
      expect(model.calls.slice(before).filter((call) => call.subtask === "s1")).toHaveLength(0);
      model.assertDone();
      // Both runs' completions are jobs: sent (the first attempt of one gets a 503, retried by a job that starts later).
      sender.start();
      await until(async () => {
        const rows = [...(await troupe.store.webhooks.forRun(original.runId)), ...(await troupe.store.webhooks.forRun(fork.runId))];
        return rows.length === 2 && rows.every((row) => row.status === "delivered") ? rows : undefined;
      }, "both deliveries");
      expect(received).toHaveLength(3);
      const store = troupe.store as PostgresStore;
      const blobs = async (thread: string): Promise<number> => (await store.pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM checkpoint_blobs WHERE thread_id = $1", [thread])).rows[0]?.n ?? 0;
      expect(await blobs(original.threadId)).toBeGreaterThan(0);
      const report = await troupe.gc({ cutoff: Date.now() + 1, batchSize: 1 });
      expect(report).toMatchObject({ runs: 2, threads: { deleted: 2, pruned: 0 }, webhookDeliveries: 2 });
      expect(await blobs(original.threadId)).toBe(0);
      expect(await blobs(fork.threadId)).toBe(0);
      expect(await troupe.store.runs.get(fork.runId)).toBeUndefined();
    } finally {
      await sender.stop();
      await troupe.shutdown();
      server.closeAllConnections();
      server.close();
      delete process.env.TROUPE_TEST_PG_SECRET;
    }
  });
});
