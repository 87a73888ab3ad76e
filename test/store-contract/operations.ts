/**
 * The store contract for operating troupe over time (issue 27), run against SQLite and Postgres
 * like the rest of the suite: runtime grants, the webhook outbox written with a run's change,
 * busy threads' waiting runs released by the store, schedules' tick claims, retention's deletes
 * and checkpoint pruning, reflection statistics and subtask durations, and the stash copy a fork
 * makes.
 */
import { randomUUID } from "node:crypto";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import { sourceOf, TRUSTED, untrustedLabel } from "../../src/core/provenance.js";
import type { NewRun, Store } from "../../src/store/index.js";
import type { StoreFactory } from "./suite.js";

function newRun(fields: Partial<NewRun> = {}): NewRun {
  return { id: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}`, task: "a task", status: "running", request: { task: "a task" }, pid: 1, host: "h", ...fields };
}

const METRICS = { llmCalls: 1, toolCalls: 0, promptTokens: 2, completionTokens: 3, costUsd: 0, reflectionCount: 0, nodeVisits: 1, durationMs: 4 };

export function defineOperationsContract(name: string, factory: StoreFactory): void {
  describe(`store contract (operations over time): ${name}`, () => {
    const opened: Store[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0).reverse()) await store.close();
    });
    const setup = async (): Promise<{ store: Store; another: () => Promise<Store> }> => {
      const database = await factory.fresh();
      const open = async (): Promise<Store> => {
        const store = await database.open();
        opened.push(store);
        return store;
      };
      return { store: await open(), another: open };
    };

    it("keeps runtime grants with their revocations, and moves the version with every change another process can see", async () => {
      const { store, another } = await setup();
      const other = await another();
      const version = await other.grants.version();
      const grant = await store.grants.add({ agent: "research", tool: "file_*", level: "WRITE", grantedBy: "alice", expiresAt: Date.now() + 60_000, conditions: { args: { path: { prefix: "notes/" } } } }, "for the notes");
      expect(grant.id).toMatch(/^g-[0-9a-f]{10}$/);
      expect(await other.grants.version()).not.toBe(version);
      expect(await other.grants.get(grant.id)).toMatchObject({ grant: { agent: "research", tool: "file_*", level: "WRITE", grantedBy: "alice", conditions: { args: { path: { prefix: "notes/" } } } }, reason: "for the notes", revokedAt: null });
      const before = await other.grants.version();
      const revoked = await other.grants.revoke(grant.id, "bob", "done");
      expect(revoked).toMatchObject({ revokedBy: "bob", revokeReason: "done", revokedAt: expect.any(Number) });
      expect(await store.grants.version()).not.toBe(before);
      // Revoking again changes nothing (it keeps who revoked it first).
      expect(await store.grants.revoke(grant.id, "carol")).toMatchObject({ revokedBy: "bob" });
      expect(await store.grants.revoke("g-missing", "bob")).toBeUndefined();
      const second = await store.grants.add({ agent: "execute", tool: "http_fetch", level: "READ", grantedBy: "alice" });
      expect((await store.grants.list()).map((item) => item.id)).toEqual([grant.id, second.id]);
      expect((await store.grants.list({ includeRevoked: false })).map((item) => item.id)).toEqual([second.id]);
      expect((await store.grants.list({ agent: "research" })).map((item) => item.id)).toEqual([grant.id]);
    });

    it("writes a webhook delivery with the run's change of status, once per change, and lets one claim send it", async () => {
      const { store, another } = await setup();
      const run = await store.runs.create(newRun({ request: { task: "t", webhook: { url: "https://hooks.example.com/x", events: ["completed", "interrupted"] } } }));
      const plain = await store.runs.create(newRun());
      await store.runs.update(plain.id, { status: "completed", answer: "a", metrics: METRICS, finishedAt: Date.now() });
      expect(await store.webhooks.forRun(plain.id)).toEqual([]);
      // Suspended by a shutdown: waits for no one, no delivery.
      await store.runs.update(run.id, { status: "interrupted", suspended: "shutdown" });
      expect(await store.webhooks.forRun(run.id)).toEqual([]);
      await store.runs.update(run.id, { status: "running", suspended: null });
      await store.runs.update(run.id, { status: "interrupted", interrupt: { kind: "plan-approval", payload: {} } });
      await store.runs.update(run.id, { status: "running", interrupt: null });
      await store.runs.update(run.id, { status: "completed", answer: "x".repeat(5_000), metrics: METRICS, finishedAt: Date.now() });
      // The same status again is no new event.
      await store.runs.update(run.id, { status: "completed" });
      const deliveries = await store.webhooks.forRun(run.id);
      expect(deliveries.map((delivery) => [delivery.event, delivery.status, delivery.attempts])).toEqual([
        ["interrupted", "pending", 0],
        ["completed", "pending", 0],
      ]);
      const completed = deliveries[1]!;
      expect(completed.payload).toMatchObject({ id: completed.id, event: "run.completed", run: { id: run.id, status: "completed", answerSummary: expect.stringMatching(/^x{999}…$/) } });
      expect((await store.webhooks.due(10)).map((delivery) => delivery.id)).toEqual(deliveries.map((delivery) => delivery.id));
      // Two processes claim at once: one sends.
      const other = await another();
      const claims = await Promise.all([store.webhooks.claim(completed.id), other.webhooks.claim(completed.id)]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await store.webhooks.claim(completed.id)).toBeUndefined();
      await store.webhooks.record(completed.id, 1, { status: "pending", httpStatus: 500, error: "the receiver answered 500", nextAttemptAt: Date.now() + 60_000 });
      expect(await store.webhooks.get(completed.id)).toMatchObject({ status: "pending", attempts: 1, lastStatus: 500 });
      expect(await store.webhooks.claim(completed.id)).toBeUndefined(); // not due yet
      const again = await store.webhooks.claim(completed.id, { ignoreDue: true });
      expect(again?.attempts).toBe(2);
      await store.webhooks.record(completed.id, 2, { status: "delivered", httpStatus: 204 });
      expect(await store.webhooks.get(completed.id)).toMatchObject({ status: "delivered", lastStatus: 204, deliveredAt: expect.any(Number) });
      expect(await store.webhooks.claim(completed.id, { ignoreDue: true })).toBeUndefined();
      // An attempt cut short (left sending) is settled as unknown once stale, never sent again.
      const interrupted = deliveries[0]!;
      await store.webhooks.claim(interrupted.id);
      expect(await store.webhooks.claim(interrupted.id, { staleMs: 60_000 })).toBeUndefined();
      expect((await store.webhooks.get(interrupted.id))?.status).toBe("sending");
      expect((await store.webhooks.stuck(0)).map((delivery) => delivery.id)).toEqual([interrupted.id]);
      expect(await store.webhooks.claim(interrupted.id, { staleMs: 0 })).toBeUndefined();
      expect(await store.webhooks.get(interrupted.id)).toMatchObject({ status: "unknown", lastError: expect.stringContaining("cut short") });
    });

    it("releases the runs waiting for a run of their thread when it ends, and not before", async () => {
      const { store } = await setup();
      const first = await store.runs.create(newRun({ threadId: "busy" }));
      const waiting = await store.runs.create(newRun({ threadId: "busy", status: "queued", pid: null, host: null }), { check: (latest) => ({ waitsFor: latest?.id ?? null }) });
      expect(waiting.waitsFor).toBe(first.id);
      expect((await store.runs.get(waiting.id))?.waitsFor).toBe(first.id);
      await store.runs.update(first.id, { status: "interrupted", interrupt: { kind: "question", payload: {} } });
      expect((await store.runs.get(waiting.id))?.waitsFor).toBe(first.id);
      await store.runs.update(first.id, { status: "cancelled", stopReason: "cancelled", supersededBy: waiting.id, finishedAt: Date.now() });
      expect((await store.runs.get(waiting.id))?.waitsFor).toBeNull();
      expect((await store.runs.get(first.id))?.supersededBy).toBe(waiting.id);
    });

    it("adds a schedule under a check of its owner's schedules, one add at a time per owner: concurrent adds from two stores cannot both pass a limit", async () => {
      const { store, another } = await setup();
      const other = await another();
      const atMost = (limit: number) => (owned: Array<{ name: string }>) => {
        if (owned.length >= limit) throw new Error(`limit ${limit}`);
      };
      const make = (target: Store, name: string, owner: string | null) =>
        target.schedules.add({ name, cron: "0 9 * * *", timezone: "UTC", task: "t", request: {}, owner, catchUp: "skip", source: "api" }, { check: atMost(5) }).then(
          (added) => (added ? "added" : "exists"),
          (error: Error) => error.message,
        );
      const outcomes = await Promise.all(Array.from({ length: 16 }, (_, index) => make(index % 2 === 0 ? store : other, `alice-${index}`, "alice")));
      expect(outcomes.filter((outcome) => outcome === "added")).toHaveLength(5);
      expect(outcomes.filter((outcome) => outcome === "limit 5")).toHaveLength(11);
      // Another owner's schedules are not counted, nor are the operator's (no owner).
      expect(await make(store, "bob-1", "bob")).toBe("added");
      expect(await make(other, "ops-1", null)).toBe("added");
      expect((await store.schedules.list({ owner: "alice" })).length).toBe(5);
      // The check sees exactly the owner's rows; a refused add writes nothing.
      let seen: string[] = [];
      await store.schedules.add({ name: "bob-2", cron: "0 9 * * *", timezone: "UTC", task: "t", request: {}, owner: "bob", catchUp: "skip", source: "api" }, { check: (owned) => void (seen = owned.map((item) => item.name)) });
      expect(seen).toEqual(["bob-1"]);
      await expect(store.schedules.add({ name: "bob-3", cron: "0 9 * * *", timezone: "UTC", task: "t", request: {}, owner: "bob", catchUp: "skip", source: "api" }, { check: () => { throw new Error("no"); } })).rejects.toThrow("no");
      expect(await other.schedules.get("bob-3")).toBeUndefined();
    });

    it("claims a schedule's tick once, and keeps the config's schedules in step by name", async () => {
      const { store, another } = await setup();
      const added = await store.schedules.add({ name: "daily", cron: "0 9 * * *", timezone: "UTC", task: "report", request: { threadId: "reports", onBusy: "enqueue" }, owner: "alice", catchUp: "once", source: "api" });
      expect(added).toMatchObject({ name: "daily", request: { threadId: "reports", onBusy: "enqueue" }, owner: "alice", catchUp: "once", lastTick: null });
      expect(await store.schedules.add({ name: "daily", cron: "* * * * *", timezone: "UTC", task: "x", request: {}, owner: null, catchUp: "skip", source: "cli" })).toBeUndefined();
      const other = await another();
      const tick = Date.UTC(2030, 0, 1, 9);
      const wins = await Promise.all([store.schedules.claim(added!.id, tick), other.schedules.claim(added!.id, tick)]);
      expect(wins.filter(Boolean)).toHaveLength(1);
      expect(await store.schedules.claim(added!.id, tick - 1)).toBe(false);
      await store.schedules.fired(added!.id, "run-1", tick + 5);
      expect(await other.schedules.get("daily")).toMatchObject({ lastTick: tick, lastRunId: "run-1", lastFiredAt: tick + 5 });
      const config = await store.schedules.upsert({ name: "nightly", cron: "0 2 * * *", timezone: "UTC", task: "clean", request: {}, owner: null, catchUp: "skip", source: "config" });
      await store.schedules.claim(config.id, tick);
      const changed = await store.schedules.upsert({ name: "nightly", cron: "0 3 * * *", timezone: "UTC", task: "clean up", request: {}, owner: null, catchUp: "skip", source: "config" });
      expect(changed).toMatchObject({ id: config.id, cron: "0 3 * * *", task: "clean up", lastTick: tick });
      expect((await store.schedules.list({ source: "config" })).map((item) => item.name)).toEqual(["nightly"]);
      expect((await store.schedules.list({ owner: "alice" })).map((item) => item.name)).toEqual(["daily"]);
      expect(await store.schedules.remove("nightly")).toBe(true);
      expect(await store.schedules.remove("nightly")).toBe(false);
    });

    it("deletes finished runs with what is keyed by them, never a running one, and prunes checkpoints", async () => {
      const { store } = await setup();
      const old = await store.runs.create(newRun({ threadId: "th" }));
      await store.runs.update(old.id, { status: "completed", finishedAt: Date.now() });
      const live = await store.runs.create(newRun({ threadId: "th2" }));
      await store.events.append(old.id, { type: "answer", text: "done" });
      await store.stash.put({ runId: old.id, subtaskId: "s1" }, { big: "z".repeat(10_000) }, TRUSTED);
      await store.stats.recordReflection({ runId: old.id, iteration: 1, type: "validation", passed: true, confidence: 0.9, at: Date.now() });
      const remoteTask = (runId: string) => ({ callId: `${runId}/s1/1/1/abc`, agent: "helper", url: "http://agent.example/.well-known/agent-card.json", taskId: `task-${runId}`, contextId: "ctx", createdAt: 1 });
      await store.remoteTasks.save(remoteTask(old.id));
      await store.remoteTasks.save(remoteTask(live.id));
      const cutoff = Date.now() + 1;
      const candidates = await store.retention.candidates({ cutoff, keep: [], limit: 10 });
      expect(candidates.map((run) => run.id)).toEqual([old.id]);
      expect(await store.retention.candidates({ cutoff, keep: ["completed"], limit: 10 })).toEqual([]);
      expect(await store.retention.dependents([old.id])).toEqual({ events: 1, stashValues: 1, webhookDeliveries: 0 });
      const deleted = await store.retention.deleteRuns([old.id, live.id]);
      expect(deleted.runs.map((run) => run.id)).toEqual([old.id]);
      expect(deleted).toMatchObject({ events: 1, stashValues: 1 });
      expect(await store.runs.get(old.id)).toBeUndefined();
      expect(await store.runs.get(live.id)).toBeDefined();
      expect((await store.stats.reflections()).total).toBe(0);
      // A remote agent's task goes with the run that made it, and only with it.
      expect(await store.remoteTasks.find(remoteTask(old.id).callId)).toBeUndefined();
      expect(await store.remoteTasks.find(remoteTask(live.id).callId)).toBeDefined();
      expect(await store.retention.threadsWithoutRuns(["th", "th2"])).toEqual(["th"]);
      // Checkpoints: some pruned by id, then the thread's whole history.
      const saver = store.checkpointer;
      const ids: string[] = [];
      let config = { configurable: { thread_id: "th", checkpoint_ns: "" } } as Parameters<typeof saver.put>[0];
      for (let step = 0; step < 3; step += 1) {
        const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { step: `v${step}`, constant: "same" }, channel_versions: { step: step + 1, constant: 1 } };
        config = await saver.put(config, checkpoint, { source: "loop", step, parents: {} }, step === 0 ? { step: 1, constant: 1 } : { step: step + 1 });
        ids.push(checkpoint.id);
      }
      expect(await store.retention.deleteCheckpoints("th", ids.slice(0, 2))).toBe(2);
      const left = await saver.getTuple({ configurable: { thread_id: "th" } });
      // The checkpoint left still has every channel, the one written by the first too.
      expect(left?.checkpoint.channel_values).toMatchObject({ step: "v2", constant: "same" });
      // A thread that still has a run keeps its checkpoints; one without is emptied.
      await saver.put({ configurable: { thread_id: "th2", checkpoint_ns: "" } }, { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { x: 1 }, channel_versions: { x: 1 } }, { source: "loop", step: 0, parents: {} }, { x: 1 });
      expect(await store.retention.deleteThreadCheckpoints(["th", "th2"])).toEqual(["th"]);
      expect(await saver.getTuple({ configurable: { thread_id: "th" } })).toBeUndefined();
      expect(await saver.getTuple({ configurable: { thread_id: "th2" } })).toBeDefined();
      expect(await store.retention.size()).toBeGreaterThan(0);
      await store.retention.reclaim({ runs: 1 });
      expect(await store.retention.claimTick("retention.tick", 100)).toBe(true);
      expect(await store.retention.claimTick("retention.tick", 100)).toBe(false);
      expect(await store.retention.claimTick("retention.tick", 200)).toBe(true);
      await store.retention.setState("gc.last", { runs: 1 });
      expect(await store.retention.getState("gc.last")).toEqual({ runs: 1 });
    });

    it("keeps reflection statistics by type and subtask durations by agent and tool", async () => {
      const { store } = await setup();
      await store.stats.recordReflection({ runId: "r1", iteration: 1, type: "validation", passed: false, confidence: 0.5, at: 1 });
      await store.stats.recordReflection({ runId: "r1", iteration: 2, type: "correction", passed: true, confidence: 0.9, at: 2 });
      await store.stats.recordReflection({ runId: "r2", iteration: 1, type: "validation", passed: true, confidence: 0.8, at: 3 });
      // A verdict recorded again replaces it.
      await store.stats.recordReflection({ runId: "r2", iteration: 1, type: "validation", passed: true, confidence: 0.7, at: 3 });
      const stats = await store.stats.reflections();
      expect(stats).toMatchObject({ total: 3, passed: 2, failed: 1, passRate: 0.667, avgConfidence: 0.7 });
      expect(stats.byType.validation).toMatchObject({ total: 2, passed: 1, avgConfidence: 0.6 });
      expect(stats.byType.correction).toMatchObject({ total: 1, passed: 1, avgConfidence: 0.9 });
      expect(stats.byType.improvement.total).toBe(0);
      expect((await store.stats.reflections({ runId: "r1" })).total).toBe(2);
      await store.stats.recordDuration("execute", "calculator", 10);
      await store.stats.recordDuration("execute", "calculator", 30);
      await store.stats.recordDuration("research", null, 500);
      expect(await store.stats.durations()).toEqual([
        { agent: "execute", tool: "calculator", count: 2, meanMs: 20 },
        { agent: "research", tool: null, count: 1, meanMs: 500 },
      ]);
    });

    it("copies a run's results (and map items) to another run", async () => {
      const { store } = await setup();
      const web = untrustedLabel([sourceOf("web", "https://example.test/")]);
      await store.stash.put({ runId: "a", subtaskId: "s1" }, { value: 1 }, TRUSTED);
      await store.stash.put({ runId: "a", subtaskId: "s2" }, "two", web);
      await store.stash.putItem({ runId: "a", subtaskId: "s2" }, { index: 0, fingerprint: "f", round: 0, status: "success", input: 1, output: 2, durationMs: 1, label: web });
      expect(await store.stash.copyResults("a", "b", ["s1", "s2"])).toBe(2);
      expect(await store.stash.get("stash:b/s1")).toEqual({ value: 1 });
      expect(await store.stash.get("stash:b/s2")).toBe("two");
      // A copy keeps where each value came from: a forked run's kept results are as trusted as they were.
      expect((await store.stash.read("stash:b/s1")).label).toEqual(TRUSTED);
      expect((await store.stash.read("stash:b/s2")).label).toEqual(web);
      expect((await store.stash.items({ runId: "b", subtaskId: "s2" })).map((item) => [item.output, item.label])).toEqual([[2, web]]);
      await expect(store.stash.get("stash:b/s3")).rejects.toMatchObject({ code: "stash_missing" });
    });
  });
}
