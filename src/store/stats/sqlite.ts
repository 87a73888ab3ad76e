import { type ReflectionStats } from "../../core/reflection.js";
import type { Statement } from "better-sqlite3";
import { type Sqlite, prepared } from "../database/sqlite.js";
import { type DurationStat, type ReflectionRecord, type RunStatsStore, reflectionStatsOf } from "./contract.js";

interface Writes {
  reflection: Statement<[string, number, string, number, number, number]>;
  duration: Statement<[string, string, number, number, number]>;
}

/**
 * The reflections and duration_stats tables in SQLite. The store opens them on the event log's
 * connection (`synchronous = NORMAL`): a figure is written beside a run, never in its way, so a
 * subtask's end costs no fsync of its own (it was a fifth of a zero-latency run); in WAL mode the
 * row survives a crash of the process, and the run's next checkpoint commit syncs it to disk.
 * Durations recorded in one turn of the event loop are summed by agent and tool and written in one
 * transaction on the next (a run's subtasks end in a handful of turns); a read writes them first.
 */
export class SqliteRunStatsStore implements RunStatsStore {
  readonly #db: Sqlite;
  /** Compiled on the first write (a read-only connection, `troupe` lookups, never writes). */
  #writes: Writes | undefined;
  /** Durations not written yet, summed by agent and tool: a turn's subtask ends share one transaction. */
  #pending = new Map<string, { agent: string; tool: string; count: number; totalMs: number }>();
  #scheduled: NodeJS.Immediate | undefined;
  /** Settles once the pending durations are written (or dropped). */
  #written: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  #compiled(): Writes {
    this.#writes ??= {
      reflection: prepared(this.#db, "INSERT OR REPLACE INTO reflections (run_id, iteration, type, passed, confidence, at) VALUES (?, ?, ?, ?, ?, ?)"),
      duration: prepared(this.#db, 
        `INSERT INTO duration_stats (agent, tool, count, total_ms, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (agent, tool) DO UPDATE SET count = count + excluded.count, total_ms = total_ms + excluded.total_ms, updated_at = excluded.updated_at`,
      ),
    };
    return this.#writes;
  }

  async recordReflection(record: ReflectionRecord): Promise<void> {
    this.#compiled().reflection.run(record.runId, record.iteration, record.type, record.passed ? 1 : 0, record.confidence, record.at);
  }

  async reflections(filter: { runId?: string; since?: number } = {}): Promise<ReflectionStats> {
    const clauses = [...(filter.runId !== undefined ? ["run_id = @runId"] : []), ...(filter.since !== undefined ? ["at >= @since"] : [])];
    const rows = prepared(this.#db, `SELECT type, COUNT(*) AS total, SUM(passed) AS passed, SUM(confidence) AS confidence_sum FROM reflections ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} GROUP BY type`)
      .all({ ...(filter.runId !== undefined ? { runId: filter.runId } : {}), ...(filter.since !== undefined ? { since: filter.since } : {}) }) as Array<{
      type: string;
      total: number;
      passed: number;
      confidence_sum: number;
    }>;
    return reflectionStatsOf(rows);
  }

  async recordDuration(agent: string, tool: string | null, durationMs: number): Promise<void> {
    const key = `${agent}\u0000${tool ?? ""}`;
    const sum = this.#pending.get(key) ?? { agent, tool: tool ?? "", count: 0, totalMs: 0 };
    sum.count += 1;
    sum.totalMs += Math.max(0, durationMs);
    this.#pending.set(key, sum);
    this.#scheduled ??= setImmediate(() => this.flush());
    if (!this.#written) {
      let resolve = (): void => {};
      const promise = new Promise<void>((settle) => (resolve = settle));
      this.#written = { promise, resolve };
    }
    return this.#written.promise;
  }

  /** Writes the durations recorded so far, in one transaction; a failure drops them (a figure, never a run's). */
  flush(): void {
    if (this.#scheduled) clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
    const written = this.#written;
    this.#written = undefined;
    const sums = [...this.#pending.values()];
    this.#pending.clear();
    if (sums.length > 0 && this.#db.open) this.#write(sums);
    written?.resolve();
  }

  #write(sums: Array<{ agent: string; tool: string; count: number; totalMs: number }>): void {
    const now = Date.now();
    try {
      const { duration } = this.#compiled();
      this.#db.transaction(() => {
        for (const sum of sums) duration.run(sum.agent, sum.tool, sum.count, sum.totalMs, now);
      })();
    } catch {
      // Kept beside the runs, never in their way: the next subtask's end counts again.
    }
  }

  async durations(): Promise<DurationStat[]> {
    this.flush();
    const rows = prepared(this.#db, "SELECT agent, tool, count, total_ms FROM duration_stats ORDER BY agent, tool").all() as Array<{ agent: string; tool: string; count: number; total_ms: number }>;
    return rows.map((row) => ({ agent: row.agent, tool: row.tool === "" ? null : row.tool, count: row.count, meanMs: Math.round(row.total_ms / Math.max(1, row.count)) }));
  }
}
