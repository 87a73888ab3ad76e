import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../core/events.js";
import { SqliteEventStore } from "./sqlite.js";

const RUN_END = { type: "run-end", status: "interrupted", stopReason: null, metrics: { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, durationMs: 0 } } as unknown as RunEvent;
const START = (runId: string): RunEvent => ({ type: "run-start", runId, threadId: "t", task: "look", resumed: false });

describe("SqliteEventStore", () => {
  it("numbers a run's events on from where its log stands after a run-end: a later drive's, or another process's written meanwhile", async () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, at INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq))");
    const events = new SqliteEventStore(db);
    expect((await events.append("run-a", START("run-a"))).seq).toBe(1);
    expect((await events.append("run-a", RUN_END)).seq).toBe(2);
    // Written by someone else after the run-end (another store on the same database).
    await events.flush();
    db.prepare("INSERT INTO events (run_id, seq, type, at, data) VALUES ('run-a', 3, 'run-end', 0, ?)").run(JSON.stringify({ type: "run-end" }));
    // The next drive's first event follows what the log holds, and the two written in one turn are in order.
    const [resumed, next] = await Promise.all([events.append("run-a", START("run-a")), events.append("run-a", RUN_END)]);
    expect([resumed.seq, next.seq]).toEqual([4, 5]);
    expect((await events.list("run-a")).map((event) => [event.seq, event.type])).toEqual([
      [1, "run-start"],
      [2, "run-end"],
      [3, "run-end"],
      [4, "run-start"],
      [5, "run-end"],
    ]);
    db.close();
  });
});
