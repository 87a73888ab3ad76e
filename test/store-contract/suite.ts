/**
 * The store contract: what every implementation of `Store` must do, run against each of them
 * (test/store-contract.int.test.ts: SQLite in a temporary data directory, Postgres on the test run's
 * throwaway cluster) — the pattern of @langchain/langgraph-checkpoint-validation, for troupe's
 * whole store: runs, events, stash, audit, evals, thread locks, long-term memory and the checkpointer.
 */
import { randomUUID } from "node:crypto";
import { emptyCheckpoint, type PendingWrite, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/core/events.js";
import { TRUSTED, sourceOf, untrustedLabel } from "../../src/core/provenance.js";
import { type MapItemRecord, UNLABELLED } from "../../src/core/stash.js";
import { memoryNamespace } from "../../src/core/memory.js";
import { threadKey, threadNameOfRun } from "../../src/core/thread-key.js";
import { type MemorySetup, type NewRun, type RunCursor, type RunRecord, SqliteRunQueue, type Store } from "../../src/store/index.js";
import { HashingEmbeddings } from "../../src/testing/hashing-embeddings.js";
import type { AuditEntry } from "../../src/tools/audit.js";

/** How a suite gets stores: each `open` on the same database (two opens: two processes sharing it). */
export interface StoreFactory {
  /** A fresh, empty database for one test; `open` it as many times as the test needs. */
  fresh(): Promise<{ open(memory?: MemorySetup): Promise<Store> }>;
}

const METRICS = { llmCalls: 1, toolCalls: 2, promptTokens: 3, completionTokens: 4, costUsd: 0, reflectionCount: 0, nodeVisits: 5, durationMs: 6 };

function newRun(fields: Partial<NewRun> = {}): NewRun {
  return { id: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}`, task: "a task", status: "queued", request: { task: "a task", n: 1 }, pid: null, host: null, ...fields };
}

function auditEntry(fields: Partial<AuditEntry> = {}): AuditEntry {
  return {
    at: Date.now(),
    runId: "run-a",
    threadId: "thread-a",
    subtaskId: "s1",
    agent: "execute",
    tool: "calculator",
    args: '{"expression":"1+1"}',
    decision: "allowed",
    status: "ok",
    level: "READ",
    grant: null,
    reason: null,
    resultPreview: "2",
    errorCode: null,
    error: null,
    durationMs: 1.5,
    attempts: 1,
    cached: false,
    ...fields,
  };
}

function item(index: number, fields: Partial<MapItemRecord> = {}): MapItemRecord {
  return { index, fingerprint: "f1", round: 0, status: "success", input: { n: index }, output: { doubled: index * 2 }, durationMs: 3, label: TRUSTED, ...fields };
}

const alice = memoryNamespace({ kind: "key", name: "alice" });
const bob = memoryNamespace({ kind: "key", name: "bob" });

export function defineStoreContract(name: string, factory: StoreFactory): void {
  describe(`store contract: ${name}`, () => {
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
    /** A store on a fresh database, with its long-term memory set up as given. */
    const open = async (memory: MemorySetup = {}): Promise<Store> => {
      const store = await (await factory.fresh()).open(memory);
      opened.push(store);
      return store;
    };

    describe("runs", () => {
      it("creates a run with every field a new run starts with, reads it back by id and by thread, and updates it", async () => {
        const { store } = await setup();
        const record = await store.runs.create(newRun({ owner: "alice", idempotencyKey: "k1", requestHash: "h1" }));
        expect(record).toMatchObject({ status: "queued", owner: "alice", starts: 0, crashes: 0, activeMs: 0, finishedAt: null, worker: null, cancelRequested: false, pendingDecision: null });
        expect(await store.runs.get(record.id)).toEqual(record);
        expect(await store.runs.latestForThread(record.threadId)).toEqual(record);
        expect(await store.runs.get("run-missing")).toBeUndefined();
        expect(await store.runs.update(record.id, { status: "running", pid: 42, host: "h", worker: "w1", startedAt: 7 })).toBe(true);
        expect(await store.runs.get(record.id)).toMatchObject({ status: "running", pid: 42, host: "h", worker: "w1", startedAt: 7, starts: 1 });
        await store.runs.update(record.id, {
          status: "interrupted",
          interrupt: { kind: "plan-approval", payload: { plan: [1, 2] } },
          metrics: METRICS,
          pendingDecision: { decision: "approve", interruptId: "i1" },
          activeMs: 1234,
          cancelRequested: true,
        });
        const updated = (await store.runs.get(record.id)) as RunRecord;
        expect(updated).toMatchObject({ interrupt: { kind: "plan-approval", payload: { plan: [1, 2] } }, metrics: METRICS, pendingDecision: { decision: "approve", interruptId: "i1" }, activeMs: 1234, cancelRequested: true });
        expect(updated.request).toEqual({ task: "a task", n: 1 });
        expect(updated.updatedAt).toBeGreaterThanOrEqual(record.updatedAt);
      });

      it("counts starts and crashes: running adds a start, a stop of its own clears the crashes", async () => {
        const { store } = await setup();
        const record = await store.runs.create(newRun({ status: "running", pid: 1, host: "h" }));
        expect(record.starts).toBe(1);
        expect(await store.runs.recordCrash(record.id)).toBe(1);
        expect(await store.runs.recordCrash(record.id)).toBe(2);
        await store.runs.update(record.id, { status: "running" });
        expect(await store.runs.get(record.id)).toMatchObject({ starts: 2, crashes: 2 });
        await store.runs.update(record.id, { status: "completed", finishedAt: 9 });
        expect(await store.runs.get(record.id)).toMatchObject({ crashes: 0, finishedAt: 9 });
        expect(await store.runs.recordCrash("run-missing")).toBe(0);
      });

      it("updates only while the run has a given status, and says whether it did", async () => {
        const { store } = await setup();
        const record = await store.runs.create(newRun());
        expect(await store.runs.update(record.id, { status: "running" }, { ifStatus: ["interrupted"] })).toBe(false);
        expect((await store.runs.get(record.id))?.status).toBe("queued");
        expect(await store.runs.update(record.id, { status: "cancelled" }, { ifStatus: ["queued", "interrupted"] })).toBe(true);
        expect((await store.runs.get(record.id))?.status).toBe("cancelled");
        expect(await store.runs.update("run-missing", { status: "failed" })).toBe(false);
      });

      it("lists newest first with filters and paging, counts, and reads several by id", async () => {
        const { store } = await setup();
        const made: RunRecord[] = [];
        for (let index = 0; index < 5; index += 1) {
          made.push(await store.runs.create(newRun({ owner: index % 2 === 0 ? "alice" : "bob", threadId: `t-${index}` })));
        }
        await store.runs.update(made[1]!.id, { status: "completed" });
        const all = await store.runs.list({ limit: 10 });
        expect(all.map((run) => run.id)).toEqual([...made].reverse().map((run) => run.id));
        expect((await store.runs.list({ owner: "alice" })).map((run) => run.id)).toEqual([made[4]!.id, made[2]!.id, made[0]!.id]);
        expect((await store.runs.list({ limit: 2, offset: 1 })).map((run) => run.id)).toEqual([made[3]!.id, made[2]!.id]);
        expect((await store.runs.list({ status: "completed" })).map((run) => run.id)).toEqual([made[1]!.id]);
        expect(await store.runs.count()).toBe(5);
        expect(await store.runs.count({ owner: "bob" })).toBe(2);
        expect(await store.runs.count({ status: "queued", owner: "alice" })).toBe(3);
        expect((await store.runs.getMany([made[0]!.id, made[3]!.id, "run-missing"])).map((run) => run.id).sort()).toEqual([made[0]!.id, made[3]!.id].sort());
        expect(await store.runs.getMany([])).toEqual([]);
      });

      it("lists last changed first a page at a time by a cursor, filtered by state, question, rejection and time changed, and counts the same", async () => {
        const { store } = await setup();
        const made: RunRecord[] = [];
        for (let index = 0; index < 7; index += 1) made.push(await store.runs.create(newRun({ owner: "alice" })));
        const last = await store.runs.create(newRun({ owner: "bob" }));
        // `since` after every creation's millisecond: a run created in the same one would count as changed since.
        while (Date.now() <= Math.max(last.updatedAt, ...made.map((run) => run.updatedAt))) await new Promise((resolve) => setImmediate(resolve));
        const since = Date.now();
        await store.runs.update(made[0]!.id, { status: "completed" });
        await store.runs.update(made[1]!.id, { status: "failed", stopReason: "rejected" });
        await store.runs.update(made[2]!.id, { status: "failed", stopReason: "failed" });
        await store.runs.update(made[3]!.id, { status: "interrupted", interrupt: { kind: "question", payload: { question: "which?" } } });
        await store.runs.update(made[4]!.id, { status: "interrupted", suspended: "shutdown" });
        await store.runs.update(made[5]!.id, { status: "running" });
        const ordered = (await store.runs.getMany(made.map((run) => run.id))).sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? 1 : -1)).map((run) => run.id);
        expect((await store.runs.list({ owner: "alice", order: "updated", limit: 10 })).map((run) => run.id)).toEqual(ordered);
        // Page by page through the cursor: every run once, in the same order.
        const paged: string[] = [];
        let after: { updatedAt: number; id: string } | undefined;
        for (;;) {
          const page = await store.runs.list({ owner: "alice", order: "updated", limit: 3, ...(after ? { after } : {}) });
          paged.push(...page.map((run) => run.id));
          const last = page.at(-1);
          if (page.length < 3 || !last) break;
          after = { updatedAt: last.updatedAt, id: last.id };
        }
        expect(paged).toEqual(ordered);
        const ids = async (filter: Parameters<typeof store.runs.list>[0]) => (await store.runs.list({ owner: "alice", limit: 10, ...filter })).map((run) => run.id).sort();
        expect(await ids({ status: "failed", rejected: true })).toEqual([made[1]!.id]);
        expect(await ids({ status: "failed", rejected: false })).toEqual([made[2]!.id]);
        expect(await ids({ status: "interrupted", interrupt: "set" })).toEqual([made[3]!.id]);
        expect(await ids({ statuses: ["running", "interrupted"], interrupt: "unset" })).toEqual([made[4]!.id, made[5]!.id].sort());
        expect(await ids({ statuses: [] })).toEqual([]);
        expect(await ids({ updatedSince: since })).toEqual(made.slice(0, 6).map((run) => run.id).sort());
        expect(await store.runs.count({ owner: "alice", statuses: ["running", "interrupted"], interrupt: "unset" })).toBe(2);
        expect(await store.runs.count({ owner: "alice", updatedSince: Date.now() + 60_000 })).toBe(0);
      });

      it("pages by key: every run once, newest first, after each page's cursor, filtered, however the runs tie on their creation time; counts up to a cap", async () => {
        const { store } = await setup();
        // Created in bursts: the runs of one turn share one creation time, so the cursor's tiebreak (the order written) is needed.
        const made: RunRecord[] = [];
        for (let burst = 0; burst < 4; burst += 1) {
          made.push(...(await Promise.all(Array.from({ length: 5 }, (_, index) => store.runs.create(newRun({ owner: "alice", threadId: `t-${burst}-${index}` }))))));
        }
        made.push(await store.runs.create(newRun({ owner: "bob" })));
        for (const run of made.filter((_, index) => index % 3 === 0 && index < 20)) await store.runs.update(run.id, { status: "failed" });
        const newestFirst = (await store.runs.list({ owner: "alice", limit: 100 })).map((run) => run.id);
        expect(newestFirst).toHaveLength(20);
        const paged: string[] = [];
        let cursor: RunCursor | undefined;
        for (let pages = 0; pages < 10; pages += 1) {
          const page = await store.runs.page({ owner: "alice", limit: 3, ...(cursor ? { after: cursor } : {}) });
          paged.push(...page.runs.map((run) => run.id));
          if (page.next === null) break;
          cursor = page.next;
        }
        expect(paged).toEqual(newestFirst);
        // A filtered page and its cursor keep the filter; the last page has no next.
        const failed = await store.runs.page({ owner: "alice", status: "failed", limit: 5 });
        expect(failed.runs.every((run) => run.status === "failed")).toBe(true);
        expect(failed.runs).toHaveLength(5);
        const rest = await store.runs.page({ owner: "alice", status: "failed", limit: 5, after: failed.next as RunCursor });
        expect(rest.runs.map((run) => run.id)).toEqual((await store.runs.list({ owner: "alice", status: "failed", limit: 100 })).slice(5).map((run) => run.id));
        expect(rest.next).toBeNull();
        expect((await store.runs.page({ owner: "carol", limit: 5 })).runs).toEqual([]);
        // Counted up to a cap: at most that many, the whole count under it.
        expect(await store.runs.count({ owner: "alice" }, 7)).toBe(7);
        expect(await store.runs.count({ owner: "alice" }, 100)).toBe(20);
        expect(await store.runs.count({ owner: "alice", status: "failed" }, 100)).toBe(7);
      });

      it("says which of several runs another run asked to give way", async () => {
        const { store } = await setup();
        const [first, second, third] = await Promise.all([store.runs.create(newRun()), store.runs.create(newRun()), store.runs.create(newRun())]);
        expect(await store.runs.supersededAmong([first!.id, second!.id])).toEqual([]);
        await store.runs.update(second!.id, { supersededBy: third!.id });
        expect(await store.runs.supersededAmong([first!.id, second!.id, third!.id, "run-missing"])).toEqual([second!.id]);
        expect(await store.runs.supersededAmong([])).toEqual([]);
      });

      it("finds a run by its owner's Idempotency-Key, which is unique per owner", async () => {
        const { store } = await setup();
        const first = await store.runs.create(newRun({ owner: "alice", idempotencyKey: "same", requestHash: "h" }));
        await store.runs.create(newRun({ owner: "bob", idempotencyKey: "same", requestHash: "h" }));
        expect((await store.runs.findByIdempotencyKey("alice", "same"))?.id).toBe(first.id);
        expect(await store.runs.findByIdempotencyKey("alice", "other")).toBeUndefined();
        await expect(store.runs.create(newRun({ owner: "alice", idempotencyKey: "same", requestHash: "h2" }))).rejects.toThrow();
      });

      it("writes the runs of one turn together, each checked against the thread's latest (earlier ones of the batch included); a refused one fails alone", async () => {
        const { store } = await setup();
        const refuseBusy = (latest: RunRecord | undefined): void => {
          if (latest && latest.status === "queued") throw new Error(`busy: ${latest.id}`);
        };
        const creating = [
          store.runs.create(newRun({ threadId: "t-batch" }), { check: refuseBusy }),
          store.runs.create(newRun({ threadId: "t-batch" }), { check: refuseBusy }),
          store.runs.create(newRun({ threadId: "t-other" }), { check: refuseBusy }),
        ];
        // Until their turn's write starts, they are submissions waiting (the server's turn gate lets them go first).
        expect(store.runs.creationsWaiting).toBe(3);
        const results = await Promise.allSettled(creating);
        expect(store.runs.creationsWaiting).toBe(0);
        expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
        expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/busy: run-/);
        expect(await store.runs.count({ threadId: "t-batch" })).toBe(1);
        expect(await store.runs.count()).toBe(2);
      });

      it("lists the runs a server must take up, and an eval's unsettled runs", async () => {
        const { store } = await setup();
        const queued = await store.runs.create(newRun({ owner: "alice" }));
        const running = await store.runs.create(newRun({ owner: "alice", status: "running" }));
        const suspended = await store.runs.create(newRun({ owner: "alice" }));
        await store.runs.update(suspended.id, { status: "interrupted", suspended: "shutdown" });
        const waiting = await store.runs.create(newRun({ owner: "alice" }));
        await store.runs.update(waiting.id, { status: "interrupted", interrupt: { kind: "question", payload: {} } });
        await store.runs.create(newRun({ owner: null, status: "running" }));
        const evalRun = await store.runs.create(newRun({ owner: "alice", evalId: "eval-1" }));
        expect((await store.runs.listUnsettled()).map((run) => run.id)).toEqual([queued.id, running.id, suspended.id]);
        expect((await store.runs.listUnsettledOfEval("eval-1")).map((run) => run.id)).toEqual([evalRun.id]);
      });

      it("is shared: a run written by one store is read by another on the same database", async () => {
        const { store, another } = await setup();
        const record = await store.runs.create(newRun());
        const other = await another();
        expect((await other.runs.get(record.id))?.id).toBe(record.id);
        await other.runs.update(record.id, { status: "failed", error: "from the other" });
        expect((await store.runs.get(record.id))?.error).toBe("from the other");
      });
    });

    describe("events", () => {
      const event = (text: string): RunEvent => ({ type: "answer", text }) as RunEvent;

      it("numbers each stream's events from 1, lists them after a seq, and keeps what was appended", async () => {
        const { store } = await setup();
        const first = await store.events.append("run-e", event("one"));
        const second = await store.events.append("run-e", event("two"));
        const other = await store.events.append("run-f", event("other"));
        expect([first.seq, second.seq, other.seq]).toEqual([1, 2, 1]);
        expect(first).toMatchObject({ runId: "run-e", type: "answer", text: "one", at: expect.any(Number) });
        expect((await store.events.list("run-e")).map((stored) => [stored.seq, (stored as { text: string }).text])).toEqual([
          [1, "one"],
          [2, "two"],
        ]);
        expect((await store.events.list("run-e", 1)).map((stored) => stored.seq)).toEqual([2]);
        expect((await store.events.list("run-e", 0, 1)).map((stored) => stored.seq)).toEqual([1]);
        const evalEvent = await store.events.appendTo("eval-1", { type: "eval-start", total: 3 });
        expect(evalEvent).toMatchObject({ seq: 1, type: "eval-start", total: 3 });
        expect(await store.events.listOf<{ type: string; total: number }>("eval-1")).toEqual([evalEvent]);
      });

      it("writes a burst of appends together, in order, and a read sees every event appended before it", async () => {
        const { store } = await setup();
        const appended = await Promise.all(Array.from({ length: 50 }, (_, index) => store.events.append("run-burst", event(`e${index}`))));
        expect(appended.map((stored) => stored.seq)).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
        void store.events.append("run-burst", event("late"));
        expect((await store.events.list("run-burst")).map((stored) => (stored as { text: string }).text).at(-1)).toBe("late");
      });

      it("numbers a stream's events without gaps or repeats when two stores append to it (the run's worker, an API process)", async () => {
        const { store, another } = await setup();
        const other = await another();
        // One process at a time appends to a run on SQLite; on Postgres any process may.
        if (store.kind === "postgres") {
          const results = await Promise.all([
            ...Array.from({ length: 20 }, (_, index) => store.events.append("run-two", event(`a${index}`))),
            ...Array.from({ length: 20 }, (_, index) => other.events.append("run-two", event(`b${index}`))),
          ]);
          expect(results.map((stored) => stored.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
        } else {
          await store.events.append("run-two", event("first"));
          await store.events.flush();
          expect((await other.events.append("run-two", event("second"))).seq).toBe(2);
        }
        expect((await other.events.list("run-two")).map((stored) => stored.seq)).toEqual(Array.from({ length: store.kind === "postgres" ? 40 : 2 }, (_, index) => index + 1));
      });

      it("reads several runs' events, each after its own seq, in one read (where other processes' events are followed)", async () => {
        const { store, another } = await setup();
        if (!store.events.listMany) return expect(store.events.follow).toBeUndefined();
        for (const run of ["run-m1", "run-m2", "run-m3"]) for (let index = 0; index < 4; index += 1) await store.events.append(run, event(`${run} ${index}`));
        // Read by another process, as an API process reads a worker's events.
        const other = await another();
        const found = await (other.events.listMany as NonNullable<typeof other.events.listMany>)(new Map([["run-m1", 0], ["run-m2", 2], ["run-m3", 4], ["run-none", 0]]), 3);
        expect([...found.keys()].sort()).toEqual(["run-m1", "run-m2"]);
        expect(found.get("run-m1")?.map((stored) => [stored.runId, stored.seq, (stored as { text: string }).text])).toEqual([
          ["run-m1", 1, "run-m1 0"],
          ["run-m1", 2, "run-m1 1"],
          ["run-m1", 3, "run-m1 2"],
        ]);
        expect(found.get("run-m2")?.map((stored) => stored.seq)).toEqual([3, 4]);
        expect(found.get("run-m2")?.[0]).toEqual((await other.events.list("run-m2", 2, 1))[0]);
        expect((await other.events.listMany?.(new Map(), 10))?.size).toBe(0);
      });

      it("tells followers in other processes when events are stored (where the store is shared)", async () => {
        const { store, another } = await setup();
        if (!store.events.follow) return expect(store.kind).toBe("sqlite");
        const other = await another();
        const heard: string[] = [];
        const unfollow = (other.events.follow as NonNullable<typeof other.events.follow>)((stream) => heard.push(stream));
        try {
          // The listener connects on the first subscription: give it a moment.
          for (let tries = 0; tries < 50 && heard.length === 0; tries += 1) {
            await store.events.append("run-followed", event(`e${tries}`));
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          expect(heard).toContain("run-followed");
        } finally {
          unfollow();
        }
      });
    });

    describe("stash", () => {
      it("keeps a result by run and subtask, byte for byte at any size, replaces it on a redo, and refuses a missing handle", async () => {
        const { store } = await setup();
        const key = { runId: "run-s", subtaskId: "s1" };
        const value = { text: "ünïcödé \u0000 \r\n ".repeat(3), big: "x".repeat(2 * 1024 * 1024), list: [1, null, true] };
        const entry = await store.stash.put(key, value, TRUSTED);
        expect(entry.ref).toBe("stash:run-s/s1");
        expect(entry.bytes).toBe(Buffer.byteLength(JSON.stringify(value), "utf8"));
        expect(await store.stash.get(entry.ref)).toEqual(value);
        await store.stash.put(key, "second", TRUSTED);
        expect(await store.stash.get(entry.ref)).toBe("second");
        expect(await store.stash.put({ runId: "run-s", subtaskId: "s2" }, undefined, TRUSTED)).toMatchObject({ bytes: 4 });
        await expect(store.stash.get("stash:run-s/none")).rejects.toThrow(/nothing is stashed under/);
        await expect(store.stash.get("not a handle")).rejects.toThrow(/not a stash reference/);
      });

      it("keeps map items as they finish (committed when putItem resolves), by index, the last write of an item winning", async () => {
        const { store, another } = await setup();
        const key = { runId: "run-m", subtaskId: "map" };
        await Promise.all([store.stash.putItem(key, item(2)), store.stash.putItem(key, item(0)), store.stash.putItem(key, item(1, { status: "error", output: undefined, error: "no" }))]);
        // Committed: another store sees them.
        const other = await another();
        expect((await other.stash.items(key)).map((record) => [record.index, record.status])).toEqual([
          [0, "success"],
          [1, "error"],
          [2, "success"],
        ]);
        await Promise.all([store.stash.putItem(key, item(1, { round: 1 })), store.stash.putItem(key, item(1, { round: 2, output: "last" }))]);
        const items = await store.stash.items(key);
        expect(items[1]).toEqual(item(1, { round: 2, output: "last" }));
        expect(items[1]).not.toHaveProperty("error");
        expect(await store.stash.items({ runId: "run-m", subtaskId: "other" })).toEqual([]);
      });

      it("keeps each result's and item's provenance label with it; a row without one (stored before labels) reads as untrusted", async () => {
        const { store, another } = await setup();
        const web = untrustedLabel([sourceOf("web", "https://example.test/page")]);
        const key = { runId: "run-l", subtaskId: "s1" };
        await store.stash.put(key, { page: "text" }, web);
        await store.stash.putItem(key, item(0, { label: web }));
        await store.stash.putItem(key, item(1, { label: undefined }));
        const other = await another();
        expect(await other.stash.read("stash:run-l/s1")).toEqual({ value: { page: "text" }, label: web });
        expect((await other.stash.items(key)).map((record) => record.label)).toEqual([web, UNLABELLED]);
        // A redo replaces the label with the value.
        await store.stash.put(key, "plain", TRUSTED);
        expect(await other.stash.read("stash:run-l/s1")).toEqual({ value: "plain", label: TRUSTED });
      });
    });

    describe("audit", () => {
      it("commits a started row before begin resolves, completes the same row, and answers a call id with its outcome", async () => {
        const { store, another } = await setup();
        const other = await another();
        const id = await store.audit.begin(auditEntry({ status: "ok", callId: "run-a/s1/0/0" }), { targets: [{ path: "a.txt", before: null, after: { size: 1 } }] });
        expect(id).toBeGreaterThan(0);
        // Already in the database, as started, for anyone.
        expect((await other.audit.unfinished({ runId: "run-a" })).map((row) => [row.id, row.status])).toEqual([[id, "started"]]);
        await store.audit.complete(id, { entry: auditEntry({ status: "ok", resultPreview: "done", durationMs: 9 }), outcome: '{"ok":true}' });
        expect(await other.audit.unfinished({ runId: "run-a" })).toEqual([]);
        const found = await other.audit.findCall("run-a/s1/0/0");
        expect(found).toMatchObject({ id, status: "ok", outcome: '{"ok":true}', effect: { targets: [{ path: "a.txt", before: null, after: { size: 1 } }] } });
        expect(found?.entry).toMatchObject({ resultPreview: "done", durationMs: 9, callId: "run-a/s1/0/0" });
        expect(await store.audit.findCall("none")).toBeUndefined();
      });

      it("commits the writes of one turn together, in order (a begin and its completion in the same batch included)", async () => {
        const { store } = await setup();
        const recorded = Array.from({ length: 30 }, (_, index) => store.audit.record(auditEntry({ tool: `tool_${index}` })));
        const begun = store.audit.begin(auditEntry({ tool: "begun" }));
        await Promise.all(recorded);
        const id = await begun;
        await store.audit.complete(id, { entry: auditEntry({ tool: "begun", status: "error", errorCode: "boom", error: "it failed" }) });
        const rows = await store.audit.list({ limit: 100 });
        expect(rows.map((row) => row.tool)).toEqual([...Array.from({ length: 30 }, (_, index) => `tool_${index}`), "begun"]);
        expect(rows.at(-1)).toMatchObject({ status: "error", errorCode: "boom", error: "it failed" });
        expect(await store.audit.count()).toBe(31);
      });

      it("filters, pages, iterates and counts statistics by agent and tool", async () => {
        const { store } = await setup();
        await store.audit.record(auditEntry({ agent: "research", tool: "web_search", status: "ok", durationMs: 10 }));
        await store.audit.record(auditEntry({ agent: "research", tool: "web_search", status: "error", durationMs: 20 }));
        await store.audit.record(auditEntry({ agent: "code", tool: "code_run", decision: "denied", status: "not_run", durationMs: 0, principal: "alice" }));
        await store.audit.record(auditEntry({ agent: "code", tool: "file_write", decision: "approved", status: "ok", cached: true, durationMs: 30, runId: "run-b" }));
        expect((await store.audit.list({ agent: "research" })).map((row) => row.status)).toEqual(["ok", "error"]);
        expect((await store.audit.list({ principal: "alice" })).map((row) => row.tool)).toEqual(["code_run"]);
        expect((await store.audit.list({ limit: 2 })).map((row) => row.tool)).toEqual(["code_run", "file_write"]);
        const all = await store.audit.list({ limit: 10 });
        expect((await store.audit.list({ afterId: all[1]!.id })).map((row) => row.tool)).toEqual(["code_run", "file_write"]);
        const iterated: string[] = [];
        for await (const row of store.audit.iterate({ runId: "run-a" })) iterated.push(row.tool);
        expect(iterated).toEqual(["web_search", "web_search", "code_run"]);
        expect(all[3]).toMatchObject({ cached: true, decision: "approved" });
        const stats = await store.audit.stats();
        expect(stats).toMatchObject({ total: 4, succeeded: 2, failed: 2, denied: 1, approved: 1, rejected: 0, cached: 1, averageMs: 15, successRate: 0.5 });
        expect(Object.keys(stats.byAgent)).toEqual(["code", "research"]);
        expect(stats.byTool.web_search).toEqual({ total: 2, succeeded: 1, failed: 1, denied: 0, successRate: 0.5 });
        expect(await store.audit.count({ decision: "denied" })).toBe(1);
        expect((await store.audit.stats({ agent: "nobody" })).total).toBe(0);
      });
    });

    describe("evals", () => {
      it("creates, updates (conditionally too), lists by owner and finds the unsettled", async () => {
        const { store } = await setup();
        const suite = [{ id: "a", task: "compute 1+1" }];
        const first = await store.evals.create({ id: "eval-1", owner: "alice", name: "one", status: "queued", provider: "offline:rules-v1", total: 1, minPassRate: 0.5, concurrency: 2, suite });
        await store.evals.create({ id: "eval-2", owner: "bob", name: "two", status: "running", provider: "offline:rules-v1", total: 1, minPassRate: 1, concurrency: 1, suite });
        await store.evals.create({ id: "eval-3", owner: null, name: "cli", status: "queued", provider: "offline:rules-v1", total: 1, minPassRate: 1, concurrency: 1, suite });
        expect(await store.evals.get("eval-1")).toEqual(first);
        expect(await store.evals.update("eval-1", { status: "running" }, { ifStatus: ["queued"] })).toBe(true);
        expect(await store.evals.update("eval-1", { status: "running" }, { ifStatus: ["queued"] })).toBe(false);
        await store.evals.update("eval-1", { passed: 1, results: { cases: [{ id: "a" }] }, status: "completed", finishedAt: 5 });
        expect(await store.evals.get("eval-1")).toMatchObject({ status: "completed", passed: 1, results: { cases: [{ id: "a" }] }, finishedAt: 5, minPassRate: 0.5, suite });
        expect((await store.evals.list()).map((record) => record.id)).toEqual(["eval-3", "eval-2", "eval-1"]);
        expect((await store.evals.list({ owner: "alice" })).map((record) => record.id)).toEqual(["eval-1"]);
        expect(await store.evals.count()).toBe(3);
        expect(await store.evals.count({ owner: "bob" })).toBe(1);
        expect((await store.evals.listUnsettled()).map((record) => record.id)).toEqual(["eval-2"]);
        expect(await store.evals.get("eval-missing")).toBeUndefined();
      });
    });

    describe("remote tasks", () => {
      it("keeps a remote agent's task by call id, the first record for a call winning, and shares it between stores", async () => {
        const { store, another } = await setup();
        expect(await store.remoteTasks.find("run-1/s1/1/remote1/1/abc")).toBeUndefined();
        const record = { callId: "run-1/s1/1/remote1/1/abc", agent: "helper", url: "http://agent.example/.well-known/agent-card.json", taskId: "task-1", contextId: "ctx-1", createdAt: 1_700_000_000_000 };
        await store.remoteTasks.save(record);
        await store.remoteTasks.save({ ...record, taskId: "task-2" });
        expect(await store.remoteTasks.find(record.callId)).toEqual(record);
        expect(await (await another()).remoteTasks.find(record.callId)).toEqual(record);
      });
    });

    describe("MCP credentials", () => {
      it("keeps one sealed credential per server and kind, replaces it, lists without the ciphertext, forgets by kind or server, and shares them between stores", async () => {
        const { store, another } = await setup();
        expect(await store.mcpCredentials.get("secure", "tokens")).toBeUndefined();
        const tokens = { server: "secure", kind: "tokens" as const, resource: "https://mcp.example/mcp", sealed: "v1:abc:1", updatedAt: 1_700_000_000_000 };
        await store.mcpCredentials.put(tokens);
        await store.mcpCredentials.put({ ...tokens, sealed: "v1:abc:2", updatedAt: 1_700_000_000_001 });
        await store.mcpCredentials.put({ ...tokens, kind: "client", sealed: "v1:abc:3" });
        await store.mcpCredentials.put({ ...tokens, server: "other", sealed: "v1:abc:4" });
        expect(await (await another()).mcpCredentials.get("secure", "tokens")).toEqual({ ...tokens, sealed: "v1:abc:2", updatedAt: 1_700_000_000_001 });
        expect(await store.mcpCredentials.list()).toEqual([
          { server: "other", kind: "tokens", resource: tokens.resource, updatedAt: tokens.updatedAt },
          { server: "secure", kind: "client", resource: tokens.resource, updatedAt: tokens.updatedAt },
          { server: "secure", kind: "tokens", resource: tokens.resource, updatedAt: 1_700_000_000_001 },
        ]);
        expect(await store.mcpCredentials.delete("secure", "tokens")).toBe(1);
        expect(await store.mcpCredentials.delete("secure")).toBe(1);
        expect(await store.mcpCredentials.delete("secure")).toBe(0);
        expect((await store.mcpCredentials.list()).map((credential) => credential.server)).toEqual(["other"]);
      });
    });

    describe("thread locks", () => {
      it("lets one drive hold a thread at a time, across every store on the database, until it is released", async () => {
        const { store, another } = await setup();
        const other = await another();
        const lease = await store.threads.acquire("t-lock");
        expect(lease).not.toBeNull();
        expect(await store.threads.acquire("t-lock")).toBeNull();
        expect(await other.threads.acquire("t-lock")).toBeNull();
        const elsewhere = await other.threads.acquire("t-other");
        expect(elsewhere).not.toBeNull();
        await lease?.release();
        const again = await other.threads.acquire("t-lock");
        expect(again).not.toBeNull();
        await again?.release();
        await elsewhere?.release();
      });

      it("frees a thread whose holder closed (on Postgres its session ended, as when its process is killed)", async () => {
        const { store, another } = await setup();
        const holder = await another();
        expect(await holder.threads.acquire("t-closed")).not.toBeNull();
        await holder.close();
        const lease = await store.threads.acquire("t-closed");
        expect(lease).not.toBeNull();
        await lease?.release();
      });

      it("says whether a run recorded as running may still be going on", async () => {
        const { store } = await setup();
        const mine = await store.runs.create(newRun({ status: "running", pid: process.pid, host: (await import("node:os")).hostname() }));
        expect(store.threads.mayBeRunning(mine)).toBe(true);
        const finished = { ...mine, status: "completed" as const };
        expect(store.threads.mayBeRunning(finished)).toBe(false);
      });
    });

describe("memory store (a LangGraph BaseStore)", () => {
      it("puts, gets, searches by words with BM25, lists namespaces and deletes", async () => {
        const { memoryStore } = await open();
        await memoryStore.put(["docs", "a"], "k1", { text: "the capital of Atlantis is Poseidonia" });
        await memoryStore.put(["docs", "a"], "k2", { text: "the ferry leaves at noon" });
        await memoryStore.put(["docs", "b"], "k3", { text: "capital letters are uppercase" });
        const item = await memoryStore.get(["docs", "a"], "k1");
        expect(item?.value).toEqual({ text: "the capital of Atlantis is Poseidonia" });
        expect(item?.createdAt).toBeInstanceOf(Date);
        const found = await memoryStore.search(["docs", "a"], { query: "What is the capital of Atlantis?" });
        expect(found.map((hit) => hit.key)).toEqual(["k1"]);
        expect(found[0]?.score).toBeGreaterThan(0);
        // A prefix reaches the namespaces below it.
        expect((await memoryStore.search(["docs"], { query: "capital" })).map((hit) => hit.key).sort()).toEqual(["k1", "k3"]);
        expect(await memoryStore.listNamespaces({ prefix: ["docs"] })).toEqual([["docs", "a"], ["docs", "b"]]);
        expect(await memoryStore.listNamespaces({ maxDepth: 1 })).toEqual([["docs"]]);
        await memoryStore.delete(["docs", "a"], "k1");
        expect(await memoryStore.get(["docs", "a"], "k1")).toBeNull();
        expect(await memoryStore.search(["docs", "a"], { query: "Atlantis" })).toEqual([]);
      });

      it("updates in place (created kept, updated moved) and filters on value fields", async () => {
        let now = 1_000;
        const { memoryStore } = await open({ memory: { now: () => now } });
        await memoryStore.put(["n"], "k", { text: "v1", kind: "a", rank: 1 });
        now = 2_000;
        await memoryStore.put(["n"], "k", { text: "v2", kind: "a", rank: 5 });
        const item = await memoryStore.get(["n"], "k");
        expect([item?.value.text, item?.createdAt.getTime(), item?.updatedAt.getTime()]).toEqual(["v2", 1_000, 2_000]);
        await memoryStore.put(["n"], "j", { text: "other", kind: "b", rank: 2 });
        expect((await memoryStore.search(["n"], { filter: { kind: "a" } })).map((hit) => hit.key)).toEqual(["k"]);
        expect((await memoryStore.search(["n"], { filter: { rank: { $gt: 3 } } })).map((hit) => hit.key)).toEqual(["k"]);
        await expect(memoryStore.search(["n"], { filter: { "bad'field": 1 } })).rejects.toMatchObject({ code: "invalid_filter" });
      });

      it("caps the items of a namespace and the size of an item, with clear codes, even under concurrent writes", async () => {
        const { memoryStore } = await open({ memory: { limits: { maxItemsPerNamespace: 5, maxValueBytes: 200 } } });
        const writes = await Promise.allSettled(Array.from({ length: 12 }, (_, index) => memoryStore.put(["n"], `k${index}`, { text: `fact ${index}` })));
        expect(writes.filter((write) => write.status === "fulfilled")).toHaveLength(5);
        const refused = writes.find((write) => write.status === "rejected") as PromiseRejectedResult;
        expect(refused.reason).toMatchObject({ code: "memory_full", data: { limit: 5 } });
        expect(await memoryStore.count(["n"])).toBe(5);
        // Updating an item of a full namespace is not adding one.
        await memoryStore.put(["n"], "k0", { text: "fact zero, again" });
        // Another namespace has its own count.
        await memoryStore.put(["m"], "k", { text: "elsewhere" });
        await expect(memoryStore.put(["m"], "big", { text: "x".repeat(500) })).rejects.toMatchObject({ code: "memory_item_too_large" });
      });

      it("writes a batch of puts in one transaction: all of them, or none", async () => {
        const { memoryStore } = await open({ memory: { limits: { maxItemsPerNamespace: 2 } } });
        await memoryStore.batch([
          { namespace: ["n"], key: "a", value: { text: "first" } },
          { namespace: ["n"], key: "b", value: { text: "second" } },
        ]);
        expect(await memoryStore.count(["n"])).toBe(2);
        const over = memoryStore.batch([
          { namespace: ["m"], key: "a", value: { text: "one" } },
          { namespace: ["m"], key: "b", value: { text: "two" } },
          { namespace: ["m"], key: "c", value: { text: "three" } },
        ]);
        await expect(over).rejects.toMatchObject({ code: "memory_full" });
        expect(await memoryStore.count(["m"])).toBe(0);
        // Reads and writes together run in order.
        const [, read] = await memoryStore.batch([{ namespace: ["n"], key: "a", value: null }, { namespace: ["n"], key: "a" }]);
        expect(read).toBeNull();
      });

      it("never returns an expired item, and an expired item frees its place", async () => {
        let now = 10_000;
        const { memoryStore } = await open({ memory: { now: () => now, limits: { maxItemsPerNamespace: 1 } } });
        await memoryStore.put(["n"], "k", { text: "short-lived fact", expiresAt: 15_000 });
        expect((await memoryStore.get(["n"], "k"))?.value.text).toBe("short-lived fact");
        now = 15_000;
        expect(await memoryStore.get(["n"], "k")).toBeNull();
        expect(await memoryStore.search(["n"], { query: "fact" })).toEqual([]);
        expect(await memoryStore.count(["n"])).toBe(0);
        await memoryStore.put(["n"], "j", { text: "a new fact" });
        expect(await memoryStore.count(["n"])).toBe(1);
      });

      it("takes any words as a query: operators, quotes and punctuation are words, not FTS syntax", async () => {
        const { memoryStore } = await open();
        await memoryStore.put(["n"], "k", { text: "NEAR the OR gate, \"quoted\" AND (parenthesised)" });
        for (const query of ['"', "NEAR(", "a AND OR NOT", "*", "((", "gate)", "-- ; DROP TABLE memory_items", "ü", "".padEnd(2_000, "é ")]) {
          await expect(memoryStore.search(["n"], { query })).resolves.toBeInstanceOf(Array);
        }
        expect((await memoryStore.search(["n"], { query: "gate OR" })).map((hit) => hit.key)).toEqual(["k"]);
      });

      it("is hybrid with an embeddings model: it finds by meaning what words miss, and says so", async () => {
        const embeddings = new HashingEmbeddings();
        const { memories } = await open({ memory: { index: { embeddings, model: "test:hashing" } } });
        await memories.save(alice, { text: "Alice's favourite colour is teal", subject: "alice's favourite colour" });
        await memories.save(alice, { text: "The office opens at nine", subject: "office hours" });
        // "favorite color" shares no word with the fact (the stemmer keeps colour and color apart), but its letters are close.
        const found = await memories.search(alice, "favorite color");
        expect(found.retrieval).toBe("hybrid");
        expect(found.items[0]?.text).toBe("Alice's favourite colour is teal");
        const lexicalOnly = await open();
        await lexicalOnly.memories.save(alice, { text: "Alice's favourite colour is teal" });
        expect(await lexicalOnly.memories.search(alice, "favorite color")).toEqual({ items: [], retrieval: "lexical" });
      });

      it("falls back to lexical, with a note, when the embeddings model fails", async () => {
        const failing = new HashingEmbeddings();
        const { memories } = await open({ memory: { index: { embeddings: failing, model: "test:hashing" } } });
        await memories.save(alice, { text: "the capital of Atlantis is Poseidonia" });
        failing.embedQuery = async () => {
          throw new Error("503 from the embeddings server");
        };
        const found = await memories.search(alice, "capital of Atlantis");
        expect(found.retrieval).toBe("lexical");
        expect(found.note).toContain("503 from the embeddings server");
        expect(found.items).toHaveLength(1);
      });
    });

    describe("memories (troupe's facts over the store)", () => {
      it("keeps each namespace to itself", async () => {
        const { memories } = await open();
        const saved = await memories.save(alice, { text: "the launch code is 0000", subject: "launch code" });
        expect((await memories.search(bob, "launch code")).items).toEqual([]);
        expect(await memories.get(bob, saved.item.id)).toBeNull();
        expect(await memories.forget(bob, saved.item.id)).toBe(false);
        expect((await memories.list(bob)).total).toBe(0);
        expect((await memories.search(alice, "launch code")).items.map((item) => item.id)).toEqual([saved.item.id]);
      });

      it("updates a fact about the same subject instead of repeating it", async () => {
        const { memories } = await open();
        const first = await memories.save(alice, { text: "my favourite colour is blue", subject: "my favourite colour", sourceRun: "run-1" });
        const second = await memories.save(alice, { text: "my favourite colour is green", subject: "My  favourite colour", sourceRun: "run-2" });
        expect([first.created, second.created, second.item.id]).toEqual([true, false, first.item.id]);
        expect(second.item).toMatchObject({ text: "my favourite colour is green", sourceRun: "run-2" });
        expect((await memories.list(alice)).total).toBe(1);
      });

      it("refuses empty, oversized and malformed input with clear codes", async () => {
        const { memories } = await open({ memory: { maxItemBytes: 100 } });
        await expect(memories.save(alice, { text: "   " })).rejects.toMatchObject({ code: "invalid_memory" });
        await expect(memories.save(alice, { text: "é".repeat(60) })).rejects.toMatchObject({ code: "memory_item_too_large", data: { bytes: 120, limit: 100 } });
        await expect(memories.save(alice, { text: "x", ttlSeconds: -1 })).rejects.toMatchObject({ code: "invalid_memory" });
        await expect(memories.save(alice, { text: "x", extra: 1 } as never)).rejects.toMatchObject({ code: "invalid_memory" });
        await expect(memories.get(alice, "../../etc")).rejects.toMatchObject({ code: "invalid_memory_id" });
        await expect(memories.search(alice, "  ")).rejects.toMatchObject({ code: "empty_query" });
        await expect(memories.search(alice, "q".repeat(1_001))).rejects.toMatchObject({ code: "query_too_long" });
      });
    });

    describe("threads named by their owner (core/thread-key.ts)", () => {
      it("keeps two keys' threads of one name apart everywhere a thread is keyed: runs, busy checks, the queue, locks and checkpoints, also when both are made at once from two stores", async () => {
        const { store, another } = await setup();
        const other = await another();
        // Each process takes from the queue (SQLite's is each server's own, in memory; Postgres's is shared).
        for (const each of [store, other]) if (each.runQueue instanceof SqliteRunQueue) each.runQueue.open();
        const alice = threadKey("alice", "daily");
        const bob = threadKey("bob", "daily");
        expect([alice, bob, threadKey("local", "daily"), threadKey(null, "daily")]).toEqual(["alice/daily", "bob/daily", "daily", "daily"]);
        // A thread's runs wait for its latest one: each key's first run on "daily" finds nothing there.
        const waitBehind = (latest: RunRecord | undefined) => (latest ? { waitsFor: latest.id } : undefined);
        const [first, second] = await Promise.all([
          store.runs.create(newRun({ threadId: alice, owner: "alice", request: { task: "a task", threadId: "daily" } }), { check: waitBehind }),
          other.runs.create(newRun({ threadId: bob, owner: "bob", request: { task: "a task", threadId: "daily" } }), { check: waitBehind }),
        ]);
        expect([first?.waitsFor, second?.waitsFor]).toEqual([null, null]);
        expect([threadNameOfRun(first as RunRecord), threadNameOfRun(second as RunRecord)]).toEqual(["daily", "daily"]);
        expect((await other.runs.latestForThread(alice))?.id).toBe(first?.id);
        expect((await store.runs.latestForThread(bob))?.id).toBe(second?.id);
        expect(await store.runs.latestForThread("daily")).toBeUndefined();
        expect((await store.runs.list({ threadId: alice })).map((run) => run.owner)).toEqual(["alice"]);
        // A second run on alice's thread waits for her first; bob's thread is not in its way.
        const third = await other.runs.create(newRun({ threadId: alice, owner: "alice" }), { check: waitBehind });
        expect(third.waitsFor).toBe(first?.id);
        // The queue takes one job per thread at a time (the run store offered each queued run): both keys' first runs at once, alice's second after her first.
        const taken = [...(await store.runQueue.take(10)).map((job) => ({ job, queue: store.runQueue })), ...(await other.runQueue.take(10)).map((job) => ({ job, queue: other.runQueue }))];
        expect(taken.map(({ job }) => job.threadId).sort()).toEqual([alice, bob]);
        for (const { job, queue } of taken) await queue.complete(job);
        // Each thread's lock is its own.
        const [aliceLease, bobLease] = await Promise.all([store.threads.acquire(alice), other.threads.acquire(bob)]);
        expect([aliceLease === null, bobLease === null]).toEqual([false, false]);
        expect(await other.threads.acquire(alice)).toBeNull();
        await aliceLease?.release();
        await bobLease?.release();
        // And so are its checkpoints (LangGraph's thread_id is the key).
        for (const [key, task] of [[alice, "alice's"], [bob, "bob's"]] as const) {
          await store.checkpointer.put({ configurable: { thread_id: key, checkpoint_ns: "" } }, { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { task }, channel_versions: { task: 1 } }, { source: "input", step: -1, parents: {} }, { task: 1 });
        }
        expect((await other.checkpointer.getTuple({ configurable: { thread_id: alice } }))?.checkpoint.channel_values).toMatchObject({ task: "alice's" });
        expect((await other.checkpointer.getTuple({ configurable: { thread_id: bob } }))?.checkpoint.channel_values).toMatchObject({ task: "bob's" });
        expect(await other.checkpointer.getTuple({ configurable: { thread_id: "daily" } })).toBeUndefined();
      });
    });

    describe("the Agent Protocol's threads and runs", () => {
      const DEFAULTS = { graph_id: "troupe" };
      const query = (owner: string, fields: Partial<Parameters<Store["agentProtocol"]["threads"]>[0]> = {}) => ({ owner, defaultMetadata: DEFAULTS, sortBy: "thread_id" as const, sortOrder: "asc" as const, limit: 100, offset: 0, ...fields });

      it("lists an owner's threads — those made through the protocol and those with runs — with their status from the latest run, filtered, sorted and paged", async () => {
        const { store, another } = await setup();
        const protocol = store.agentProtocol;
        expect(await protocol.addThread({ threadId: "alice/made", owner: "alice", metadata: { tag: "x", nested: { b: 2, a: 1 }, gone: null }, now: 1_000 })).toBe(true);
        expect(await protocol.addThread({ threadId: "alice/made", owner: "alice", metadata: {}, now: 2_000 })).toBe(false);
        expect(await protocol.thread("alice/made")).toEqual({ owner: "alice", metadata: { tag: "x", nested: { a: 1, b: 2 }, gone: null }, createdAt: 1_000, updatedAt: 1_000 });
        const runOn = async (threadId: string, owner: string, status: RunRecord["status"], patch: Record<string, unknown> = {}) => {
          const record = await store.runs.create(newRun({ threadId, owner }));
          if (status !== "queued") await store.runs.update(record.id, { status, ...patch });
          return record;
        };
        await runOn("alice/done", "alice", "completed");
        await runOn("alice/waits", "alice", "interrupted", { interrupt: { kind: "plan-approval", payload: {} } });
        await runOn("alice/stopped", "alice", "interrupted", { suspended: "shutdown" });
        await runOn("alice/broke", "alice", "failed");
        await runOn("alice/queued", "alice", "queued");
        await runOn("bob/done", "bob", "completed");
        const other = (await another()).agentProtocol;
        const listed = await other.threads(query("alice"));
        expect(listed.map((thread) => [thread.threadId, thread.status])).toEqual([
          ["alice/broke", "error"],
          ["alice/done", "idle"],
          ["alice/made", "idle"],
          ["alice/queued", "busy"],
          ["alice/stopped", "busy"],
          ["alice/waits", "interrupted"],
        ]);
        expect(listed.find((thread) => thread.threadId === "alice/done")?.metadata).toBeNull();
        expect(await other.countThreads(query("alice"))).toBe(6);
        expect((await other.threads(query("bob"))).map((thread) => thread.threadId)).toEqual(["bob/done"]);
        // Metadata: each key equal, objects whatever their key order, a thread without a row by the defaults, null only where it is null.
        expect((await other.threads(query("alice", { metadata: { tag: "x", nested: { a: 1, b: 2 } } }))).map((thread) => thread.threadId)).toEqual(["alice/made"]);
        expect((await other.threads(query("alice", { metadata: { gone: null } }))).map((thread) => thread.threadId)).toEqual(["alice/made"]);
        expect(await other.countThreads(query("alice", { metadata: { graph_id: "troupe" } }))).toBe(5);
        expect((await other.threads(query("alice", { status: "busy" }))).map((thread) => thread.threadId)).toEqual(["alice/queued", "alice/stopped"]);
        expect((await other.threads(query("alice", { threadIds: ["alice/made", "alice/waits", "bob/done"] }))).map((thread) => thread.threadId)).toEqual(["alice/made", "alice/waits"]);
        // Sorted, with pages that neither overlap nor skip.
        const pages = [...(await other.threads(query("alice", { limit: 4, sortOrder: "desc" }))), ...(await other.threads(query("alice", { limit: 4, offset: 4, sortOrder: "desc" })))];
        expect(pages.map((thread) => thread.threadId)).toEqual(listed.map((thread) => thread.threadId).reverse());
        const byCreation = await other.threads(query("alice", { sortBy: "created_at", sortOrder: "asc" }));
        expect(byCreation[0]?.threadId).toBe("alice/made");
        // Metadata merges; the row goes, and its thread with it unless it has runs.
        expect(await protocol.mergeMetadata({ threadId: "alice/made", owner: "alice", metadata: { tag: "y", more: true }, now: 3_000, createdAt: 1_000 })).toEqual({ tag: "y", nested: { a: 1, b: 2 }, gone: null, more: true });
        expect(await protocol.mergeMetadata({ threadId: "alice/done", owner: "alice", metadata: { graph_id: "troupe" }, now: 3_000, createdAt: 500 })).toEqual({ graph_id: "troupe" });
        expect((await other.threads(query("alice", { threadIds: ["alice/done"] })))[0]?.metadata).toEqual({ graph_id: "troupe" });
        expect(await protocol.deleteThread("alice/made")).toBe(true);
        expect(await protocol.deleteThread("alice/made")).toBe(false);
        expect(await other.countThreads(query("alice"))).toBe(5);
      });

      it("reads each thread's latest turns, and keeps what a run was made with", async () => {
        const { store } = await setup();
        for (const [threadId, count] of [["a/t1", 4], ["a/t2", 1]] as const) {
          for (let index = 0; index < count; index += 1) {
            const record = await store.runs.create(newRun({ threadId, owner: "a", task: `${threadId} task ${index}` }));
            await store.runs.update(record.id, { status: "completed", answer: `answer ${index}` });
          }
        }
        const turns = await store.agentProtocol.turns(["a/t1", "a/t2", "a/none"], 3);
        expect(turns.map((turn) => [turn.threadId, turn.task, turn.answer, turn.status])).toEqual([
          ["a/t1", "a/t1 task 1", "answer 1", "completed"],
          ["a/t1", "a/t1 task 2", "answer 2", "completed"],
          ["a/t1", "a/t1 task 3", "answer 3", "completed"],
          ["a/t2", "a/t2 task 0", "answer 0", "completed"],
        ]);
        await store.agentProtocol.addRun({ runId: "run-x", owner: "a", metadata: { source: "ui" }, multitaskStrategy: "enqueue", now: 1 });
        expect(await store.agentProtocol.runs(["run-x", "run-y"])).toEqual(new Map([["run-x", { metadata: { source: "ui" }, multitaskStrategy: "enqueue" }]]));
      });
    });

    describe("the Agent Protocol's rows and retention", () => {
      it("go with their run, and with their thread's last run", async () => {
        const { store } = await setup();
        const record = await store.runs.create(newRun({ threadId: "a/gone", owner: "a" }));
        await store.runs.update(record.id, { status: "completed" });
        await store.agentProtocol.addThread({ threadId: "a/gone", owner: "a", metadata: { tag: 1 }, now: 1 });
        await store.agentProtocol.addThread({ threadId: "a/kept", owner: "a", metadata: {}, now: 1 });
        await store.agentProtocol.addRun({ runId: record.id, owner: "a", metadata: {}, multitaskStrategy: null, now: 1 });
        expect((await store.retention.deleteRuns([record.id])).runs.map((run) => run.id)).toEqual([record.id]);
        expect(await store.agentProtocol.runs([record.id])).toEqual(new Map());
        await store.retention.deleteThreadCheckpoints(["a/gone"]);
        expect(await store.agentProtocol.thread("a/gone")).toBeUndefined();
        expect(await store.agentProtocol.thread("a/kept")).toBeDefined();
      });
    });

    describe("the memory store's trees (one owner's namespaces)", () => {
      it("caps the items under a root together, across its namespaces and under concurrent writes; other roots count apart", async () => {
        const { memoryStore } = await open();
        const tree = { root: ["agent-store", "alice"], maxItems: 4 };
        const writes = await Promise.allSettled(Array.from({ length: 10 }, (_, index) => memoryStore.putInTree(tree, ["agent-store", "alice", `ns${index % 3}`], `k${index}`, { value: index })));
        expect(writes.filter((write) => write.status === "fulfilled")).toHaveLength(4);
        expect((writes.find((write) => write.status === "rejected") as PromiseRejectedResult).reason).toMatchObject({ code: "store_full", data: { limit: 4 } });
        // Replacing an item is not adding one; another owner's tree has its own count.
        const kept = (await memoryStore.search(["agent-store", "alice"], { limit: 10 }))[0];
        await memoryStore.putInTree(tree, kept?.namespace as string[], kept?.key as string, { value: "again" });
        await memoryStore.putInTree({ root: ["agent-store", "bob"], maxItems: 4 }, ["agent-store", "bob", "x"], "k", { value: 1 });
        await expect(memoryStore.putInTree(tree, ["elsewhere"], "k", { value: 1 })).rejects.toMatchObject({ code: "invalid_namespace" });
        expect(await memoryStore.listNamespaces({ prefix: ["agent-store", "bob"] })).toEqual([["agent-store", "bob", "x"]]);
        expect((await memoryStore.listNamespaces({ prefix: ["agent-store", "alice"], maxDepth: 2 })).length).toBe(1);
      });
    });

    describe("checkpointer", () => {
      it("saves checkpoints per thread with their parent, lists them newest first, and keeps pending writes", async () => {
        const { store, another } = await setup();
        const saver = store.checkpointer;
        const thread = `t-${randomUUID()}`;
        const first = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { task: "one" }, channel_versions: { task: 1 } };
        const config1 = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, first, { source: "input", step: -1, parents: {} }, { task: 1 });
        const second = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { task: "two", big: "y".repeat(100_000) }, channel_versions: { task: 2, big: 2 } };
        const config2 = await saver.put(config1, second, { source: "loop", step: 0, parents: {} }, { task: 2, big: 2 });
        const writes: PendingWrite[] = [
          ["results", { s1: { ref: "stash:r/s1" } }],
          ["__error__", "boom"],
        ];
        await saver.putWrites(config2, writes, "task-1");
        const other = (await another()).checkpointer;
        const tuple = await other.getTuple({ configurable: { thread_id: thread } });
        expect(tuple?.checkpoint.id).toBe(second.id);
        expect(tuple?.checkpoint.channel_values).toMatchObject({ task: "two", big: "y".repeat(100_000) });
        expect(tuple?.parentConfig?.configurable?.checkpoint_id).toBe(first.id);
        expect(tuple?.metadata).toMatchObject({ source: "loop", step: 0 });
        // A special write (an error) comes first: LangGraph gives those negative indexes.
        expect(tuple?.pendingWrites?.map(([task, channel, value]) => [task, channel, value])).toEqual([
          ["task-1", "__error__", "boom"],
          ["task-1", "results", { s1: { ref: "stash:r/s1" } }],
        ]);
        const listed: string[] = [];
        for await (const entry of other.list({ configurable: { thread_id: thread } })) listed.push(entry.checkpoint.id);
        expect(listed).toEqual([second.id, first.id]);
        expect((await other.getTuple({ configurable: { thread_id: thread, checkpoint_id: first.id } }))?.checkpoint.channel_values).toMatchObject({ task: "one" });
        expect(await other.getTuple({ configurable: { thread_id: "no-such-thread" } })).toBeUndefined();
      });
    });
  });
}
