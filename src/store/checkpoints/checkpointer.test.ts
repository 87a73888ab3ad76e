import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Annotation, Command, END, interrupt, START, StateGraph } from "@langchain/langgraph";
import { type BaseCheckpointSaver, emptyCheckpoint, ERROR, INTERRUPT } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TroupeCheckpointer } from "./sqlite.js";
import { DATABASE_FILE, openDatabase } from "../database/sqlite.js";

let directory: string;
beforeEach(() => {
  directory = mkdtempSync(path.join(tmpdir(), "troupe-checkpointer-"));
});
afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

function rows(db: Database.Database) {
  return {
    checkpoints: db.prepare("SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints ORDER BY checkpoint_id").all(),
    writes: db.prepare("SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value FROM writes ORDER BY checkpoint_id, task_id, idx").all(),
  };
}

/** The same puts and writes, including a replayed task and a special write that replaces the earlier one. */
async function exercise(saver: BaseCheckpointSaver) {
  const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
  const first = { ...emptyCheckpoint(), id: "1ef00000-0000-6000-8000-000000000001", ts: "2026-11-22T00:00:00.000Z" };
  const stored = await saver.put(config, first, { source: "input", step: -1, parents: {} }, {});
  await saver.putWrites(stored, [["results", { s1: 1 }], ["nodes", ["intake"]]], "task-a");
  await saver.putWrites(stored, [["results", { s1: 2 }]], "task-a");
  await saver.putWrites(stored, [[ERROR, { message: "first" }]], "task-b");
  await saver.putWrites(stored, [[ERROR, { message: "second" }]], "task-b");
  await saver.putWrites(stored, [[INTERRUPT, [{ value: "ask" }]]], "task-c");
  const second = { ...emptyCheckpoint(), id: "1ef00000-0000-6000-8000-000000000002", ts: "2026-11-22T00:00:01.000Z", channel_values: { results: { s1: 1 } } };
  await saver.put(stored, second, { source: "loop", step: 0, parents: {} }, {});
  return saver.getTuple(config);
}

describe("the checkpointer", () => {
  it("writes exactly the rows LangGraph's SQLite saver writes, and reads them back alike", async () => {
    const stockDb = new Database(path.join(directory, "stock.db"));
    const oursDb = openDatabase(directory);
    const stockTuple = await exercise(new SqliteSaver(stockDb));
    const oursTuple = await exercise(new TroupeCheckpointer(oursDb));
    expect(rows(oursDb)).toEqual(rows(stockDb));
    expect(oursTuple).toEqual(stockTuple);
    // An ordinary write of a task is kept once; a special one replaces the earlier.
    expect(rows(oursDb).writes.map((row) => (row as { channel: string }).channel)).toEqual(["results", "nodes", ERROR, INTERRUPT]);
    stockDb.close();
    oursDb.close();
  });

  it("commits a task's writes without a sync of their own and leaves the connection at synchronous FULL", async () => {
    const db = openDatabase(directory);
    const saver = new TroupeCheckpointer(db);
    await exercise(saver);
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    // A write the database refuses still leaves it at FULL.
    db.exec("CREATE TRIGGER refuse BEFORE INSERT ON writes BEGIN SELECT RAISE(ABORT, 'refused'); END");
    await expect(saver.putWrites({ configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "x" } }, [["results", 1]], "task-z")).rejects.toThrow("refused");
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    db.close();
  });

  it("writes the checkpoints put in one turn together: each is stored when its put resolves, a refused one fails alone, FULL is kept", async () => {
    const db = openDatabase(directory);
    const saver = new TroupeCheckpointer(db);
    db.exec("CREATE TRIGGER refuse BEFORE INSERT ON checkpoints WHEN NEW.thread_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    const checkpointOf = (index: number) => ({ ...emptyCheckpoint(), id: `1ef00000-0000-6000-8000-00000000000${index}`, ts: "2026-11-22T00:00:00.000Z" });
    const threads = ["a", "b", "refused", "c"];
    const puts = threads.map((thread, index) => saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, checkpointOf(index), { source: "input", step: -1, parents: {} }));
    const outcomes = await Promise.allSettled(puts);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toContain("refused");
    // Another connection (another process) reads the three: they were committed before the puts resolved.
    const reader = new Database(path.join(directory, DATABASE_FILE), { readonly: true });
    expect(reader.prepare("SELECT thread_id FROM checkpoints ORDER BY thread_id").all()).toEqual([{ thread_id: "a" }, { thread_id: "b" }, { thread_id: "c" }]);
    reader.close();
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    db.close();
  });

  it("runs a graph through an interrupt and a resume in another process's view of the file", async () => {
    const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (current, next) => [...current, ...next], default: () => [] }) });
    const build = (saver: BaseCheckpointSaver) =>
      new StateGraph(State)
        .addNode("ask", () => ({ log: [`answer: ${String(interrupt("which?"))}`] }))
        .addEdge(START, "ask")
        .addEdge("ask", END)
        .compile({ checkpointer: saver });
    const config = { configurable: { thread_id: "graph" }, durability: "sync" as const };
    const first = openDatabase(directory);
    await build(new TroupeCheckpointer(first)).invoke({ log: ["start"] }, config);
    first.close();
    // Opened afresh, as a resumed process would.
    const again = openDatabase(directory);
    const graph = build(new TroupeCheckpointer(again));
    expect((await graph.getState(config)).tasks[0]?.interrupts[0]?.value).toBe("which?");
    expect((await graph.invoke(new Command({ resume: "this one" }), config)).log).toEqual(["start", "answer: this one"]);
    again.close();
  });
});
