import { writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { TroupeConfig } from "../src/config/config-file.js";
import { verifyWebhookSignature } from "../src/core/webhook.js";
import { Troupe } from "../src/runtime/engine.js";
import { WebhookSender } from "../src/runtime/webhook-sender.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { runCli, tempDir } from "./helpers.js";
import { call, serveApi, stopAll, until } from "./scale-out-helpers.js";

const SECRET = "whsec-test-secret";

interface Received {
  body: string;
  signature: string | undefined;
  delivery: string | undefined;
  event: string | undefined;
}

/** A receiver on 127.0.0.1 that answers each delivery as `answer` says (a status, or never). */
async function receiver(answer: (received: Received, index: number) => number | "hold"): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      const item = { body, signature: request.headers["troupe-signature"] as string | undefined, delivery: request.headers["troupe-delivery"] as string | undefined, event: request.headers["troupe-event"] as string | undefined };
      received.push(item);
      const status = answer(item, received.length - 1);
      if (status === "hold") held.push(response);
      else response.writeHead(status).end(status >= 300 ? "no" : "ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of held) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await stopAll();
  for (const close of closers.splice(0)) await close();
  delete process.env.TROUPE_TEST_WEBHOOK_SECRET;
});

describe("webhooks", () => {
  it("delivers one signed delivery per event after two 500s, never twice, through the network guard", async () => {
    process.env.TROUPE_TEST_WEBHOOK_SECRET = SECRET;
    // Each delivery's first two attempts get a 500.
    const attempts = new Map<string, number>();
    const hook = await receiver((item) => {
      const count = (attempts.get(item.delivery ?? "") ?? 0) + 1;
      attempts.set(item.delivery ?? "", count);
      return count <= 2 ? 500 : 200;
    });
    closers.push(hook.close);
    const directory = tempDir();
    const config = TroupeConfig.parse({ webhooks: { secretEnv: "TROUPE_TEST_WEBHOOK_SECRET", allowAddresses: ["127.0.0.1"], retryBaseMs: 20, retryMaxMs: 200, timeoutMs: 2_000 } });
    // One subtask: its worker's text is the answer (the fast route), no synthesizer call.
    const model = new ScriptedChatModel({ steps: [planStep([subtask("s1", "execute", "One")]), finalStep("s1", "one"), reviewStep(0.9)] });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws"), config });
    const sender = new WebhookSender({ store: troupe.store, config: troupe.config.webhooks });
    try {
      // Refused before anything runs: a host the rules do not allow, a scheme that is not http(s).
      await expect(troupe.run({ task: "x", webhook: { url: "http://10.0.0.1/hook" } })).rejects.toMatchObject({ code: "webhook_refused" });
      await expect(troupe.run({ task: "x", webhook: { url: "file:///etc/passwd" } })).rejects.toMatchObject({ code: "invalid_request" });
      const waiting = await troupe.run({ task: "one thing", approvePlan: true, webhook: { url: hook.url } });
      expect(waiting.status).toBe("interrupted");
      const done = await troupe.resume(waiting.threadId, { decision: "approve" });
      expect(done.status).toBe("completed");
      sender.start();
      const deliveries = await until(async () => {
        const rows = await troupe.store.webhooks.forRun(done.runId);
        return rows.length === 2 && rows.every((row) => row.status === "delivered") ? rows : undefined;
      }, "both deliveries");
      expect(deliveries.map((row) => [row.event, row.attempts, row.lastStatus])).toEqual([
        ["interrupted", 3, 200],
        ["completed", 3, 200],
      ]);
      // Let any stray retry show itself: none comes after the 2xx.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(hook.received).toHaveLength(6);
      // Two deliveries, three attempts each (500, 500, 200), each attempt under the delivery's own id.
      expect([...attempts.values()]).toEqual([3, 3]);
      expect(new Set(hook.received.map((item) => item.event))).toEqual(new Set(["run.interrupted", "run.completed"]));
      for (const item of hook.received) {
        expect(verifyWebhookSignature(SECRET, item.signature, item.body)).toBeUndefined();
        expect(verifyWebhookSignature("another secret", item.signature, item.body)).toBe("no signature matches the body");
        expect(verifyWebhookSignature(SECRET, item.signature, `${item.body} `)).toBe("no signature matches the body");
      }
      // A replay of an old delivery fails the timestamp check.
      expect(verifyWebhookSignature(SECRET, hook.received[0]?.signature, hook.received[0]?.body as string, { now: Date.now() + 3_600_000 })).toMatch(/tolerance/);
      // Deliveries of different events retry side by side, so their last attempts may arrive in either order.
      const completed = JSON.parse(hook.received.find((item) => item.event === "run.completed")?.body as string) as Record<string, unknown>;
      expect(completed).toMatchObject({ event: "run.completed", run: { id: done.runId, status: "completed", answerSummary: "one" }, links: { task: `/api/v1/tasks/${done.runId}` } });
      const view = await troupe.show(done.runId);
      expect(view.webhooks.map((row) => row.status)).toEqual(["delivered", "delivered"]);
    } finally {
      await sender.stop();
      await troupe.shutdown();
    }
  });

  it("never sends a delivery again after its process was killed between sending it and recording the answer", async () => {
    const hook = await receiver(() => "hold");
    closers.push(hook.close);
    const directory = tempDir();
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ webhooks: { allowAddresses: ["127.0.0.1"], timeoutMs: 1_000, retryBaseMs: 50 } }));
    const env = { TROUPE_DATA_DIR: path.join(directory, "data"), TROUPE_WORKSPACE: path.join(directory, "ws"), TROUPE_WEBHOOK_SECRET: SECRET, TROUPE_PROVIDER: "offline" };
    const first = await serveApi(directory, env, []);
    const submitted = await call<{ task_id: string }>(`${first.url}/api/v1/execute`, { method: "POST", body: { task: "compute 2+3", webhook: { url: hook.url, events: ["completed"] } } });
    expect(submitted.status).toBe(202);
    await until(() => (hook.received.length > 0 ? true : undefined), "the delivery to arrive");
    // Sent, and the answer never came back to record: the process dies here.
    first.child.kill("SIGKILL");
    await first.exited;
    const second = await serveApi(directory, env, []);
    // The restarted server settles it as unknown (after an attempt's timeout and a margin) and does not send it again.
    await until(async () => {
      const shown = await runCli(["runs", "show", submitted.body.data.task_id, "--json"], { cwd: directory, env });
      const view = JSON.parse(shown.stdout || "{}") as { webhooks?: Array<{ status: string; lastError: string | null }> };
      return view.webhooks?.[0]?.status === "unknown" ? view : undefined;
    }, "the delivery to be settled as unknown");
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(hook.received).toHaveLength(1);
    await second.stop();
  });
});
