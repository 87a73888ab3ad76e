import { describe, expect, it } from "vitest";
import { OfflineChatModel } from "../../src/providers/offline/offline-chat-model.js";
import type { EvalView } from "../../src/server/schemas.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { envelope, makeApp, waitFor } from "../server-helpers.js";

// On main the server's queues were first in, first out: a one-case eval of one key waited 124.5 s
// behind another key's 400 cases, and a task behind every task another key had queued.

const KEYS = { apiKeys: "alice:key-alice-123,bob:key-bob-456" };
const ALICE = { authorization: "Bearer key-alice-123" };
const BOB = { authorization: "Bearer key-bob-456" };

/** The offline model, holding its first call until released (a run that keeps the one slot while the test queues the rest). */
class HeldOfflineModel extends OfflineChatModel {
  held = false;
  release: () => void = () => undefined;
  readonly #gate = new Promise<void>((resolve) => {
    this.release = resolve;
  });
  #first = true;

  override async _generate(...args: Parameters<OfflineChatModel["_generate"]>): ReturnType<OfflineChatModel["_generate"]> {
    if (this.#first) {
      this.#first = false;
      this.held = true;
      await this.#gate;
    }
    return super._generate(...args);
  }
}

describe("queues are fair across API keys", () => {
  it("starts waiting tasks round-robin across keys: another key's task does not wait behind a flood", async () => {
    // The one slot is held by alice's first task until every other task waits: the order they start in is the queue's alone.
    const model = new HeldOfflineModel({});
    const app = await makeApp({ config: { ...KEYS, maxRunning: 1 }, troupe: { models: modelSetOf(model, { provider: "offline", model: "offline" }) } });
    const submit = async (headers: Record<string, string>, task: string): Promise<string> =>
      envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", headers, payload: { task } })).data.task_id;
    const status = async (id: string) => (await app.troupe.store.runs.get(id))?.status;
    const alice = [await submit(ALICE, "compute 1 + 1")];
    await waitFor(async () => ((await status(alice[0] as string)) === "running" && model.held ? true : undefined), "alice's first task to hold the slot");
    for (let index = 2; index <= 5; index += 1) alice.push(await submit(ALICE, `compute ${index} + ${index}`));
    const bob = await submit(BOB, "compute 7 * 6");
    const all = [...alice, bob];
    expect(await Promise.all(all.slice(1).map(status))).toEqual(["queued", "queued", "queued", "queued", "queued"]);
    model.release();
    await waitFor(async () => ((await Promise.all(all.map(status))).every((value) => value === "completed") ? true : undefined), "every task to complete");
    const started = await Promise.all(all.map(async (id) => ({ id, at: (await app.troupe.store.runs.get(id))?.startedAt ?? 0 })));
    const order = started.sort((left, right) => left.at - right.at).map((entry) => (entry.id === bob ? "bob" : "alice"));
    // First in, first out started bob's last (index 5); fair, it goes next but one, not behind the flood.
    expect(order.indexOf("bob")).toBeLessThanOrEqual(2);
  });

  it("runs one eval per key at a time, so another key's one-case eval starts while the flood's evals wait", async () => {
    const app = await makeApp({ config: KEYS });
    const suite = (count: number, prefix: string) => Array.from({ length: count }, (_, index) => JSON.stringify({ id: `${prefix}${index}`, task: `compute ${index} * 3` })).join("\n");
    const evals: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const response = await app.app.inject({ method: "POST", url: "/api/v1/evals", headers: ALICE, payload: { suite: suite(8, `a${index}-`), concurrency: 1 } });
      evals.push(envelope<{ eval_id: string }>(response).data.eval_id);
    }
    const bobEval = envelope<{ eval_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/evals", headers: BOB, payload: { suite: suite(1, "b"), concurrency: 1 } })).data.eval_id;
    let aliceQueuedWhileBobRan = 0;
    await waitFor(async () => {
      const view = envelope<EvalView>(await app.app.inject({ method: "GET", url: `/api/v1/evals/${bobEval}`, headers: BOB })).data;
      if (view.status === "running" || view.status === "completed") {
        const statuses = await Promise.all(evals.map(async (id) => (await app.troupe.store.evals.get(id))?.status));
        aliceQueuedWhileBobRan = Math.max(aliceQueuedWhileBobRan, statuses.filter((status) => status === "queued").length);
      }
      return view.status === "completed" ? view : undefined;
    }, "bob's eval to finish");
    // Alice's evals run one after another; bob's did not wait for any of them to finish.
    expect(aliceQueuedWhileBobRan).toBe(2);
    for (const id of evals) await app.app.inject({ method: "POST", url: `/api/v1/evals/${id}/cancel`, headers: ALICE });
  });
});
