import { refreshStatistics, type Sqlite } from "../database/sqlite.js";
import { durably } from "../database/wal-sync.js";
import type { SqliteRunQueue } from "../queue/sqlite.js";
import { RowFailure, TurnBatch } from "../turn-batch.js";
import { DELIVERY_INSERT, deliveryValues } from "../webhooks/contract.js";
import {
  type CreateRunOptions,
  type NewRun,
  type RunListOptions,
  type RunCreation,
  type RunFilter,
  type RunPage,
  type RunPageOptions,
  type RunPatch,
  type RunRecord,
  RunRow,
  type RunStore,
  type UpdateRunOptions,
  consequencesOf,
  filters,
  newRunRecord,
  pageFilters,
  pageOf,
  runUpdate,
  unsettledQueries,
} from "./contract.js";

const UNSETTLED = unsettledQueries("rowid");
/** Runs created between two refreshes of the planner's statistics. */
const STATISTICS_EVERY = 5_000;

function queuedRunOf(record: RunRecord): { runId: string; threadId: string; owner: string | null; waitsFor: string | null } {
  return { runId: record.id, threadId: record.threadId, owner: record.owner, waitsFor: record.waitsFor };
}

interface ReleasedRow {
  id: string;
  thread_id: string;
  owner: string | null;
  status: string;
}

/**
 * The runs table in SQLite, on the connection with `synchronous = FULL`: each commit is synced.
 * Like the Postgres store feeds pg-boss, it hands the server's run queue every run written queued
 * (created, answered, released by the run it waited for) once the write committed, and withdraws
 * a run that stopped being queued.
 */
export class SqliteRunStore implements RunStore {
  readonly #db: Sqlite;
  readonly #queue: SqliteRunQueue | undefined;
  readonly #statements = new Map<string, ReturnType<Sqlite["prepare"]>>();
  readonly #creations: TurnBatch<RunCreation, RunRecord>;
  /** Runs created through this store (for refreshing the planner's statistics now and then). */
  #created = 0;

  constructor(db: Sqlite, queue?: SqliteRunQueue) {
    this.#db = db;
    this.#queue = queue;
    // Group commit: the runs created in one turn share one transaction (one fsync), each in a
    // savepoint of its own, so one refused by its check (or a unique key) fails alone.
    // The commit's fsync runs off the event loop (durably): the creations resolve once on disk.
    // The savepoint's function is made once: better-sqlite3 builds each transaction function anew.
    const insertOne = this.#db.transaction((creation: RunCreation) => this.#insert(creation));
    const insertAll = this.#db.transaction((creations: RunCreation[]) =>
      creations.map((creation) => {
        try {
          return insertOne(creation);
        } catch (error) {
          return new RowFailure(error);
        }
      }),
    );
    this.#creations = new TurnBatch<RunCreation, RunRecord>((creations) => {
      const results = durably(this.#db, () => insertAll(creations));
      // The planner's statistics follow the table as it grows (a no-op while they are fresh).
      const before = this.#created;
      this.#created += creations.length;
      if (Math.floor(before / STATISTICS_EVERY) !== Math.floor(this.#created / STATISTICS_EVERY)) refreshStatistics(this.#db);
      return results;
    });
  }

  /** Prepared statements are kept: preparing one costs more than running it. */
  #statement(sql: string): ReturnType<Sqlite["prepare"]> {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  get creationsWaiting(): number {
    return this.#creations.pending;
  }

  async create(record: NewRun, options: CreateRunOptions = {}): Promise<RunRecord> {
    const created = await this.#creations.add({ record, check: options.check });
    if (created.status === "queued") this.#queue?.offer(queuedRunOf(created));
    return created;
  }

  #insert({ record, check }: RunCreation): RunRecord {
    const fields = check?.(this.#latestForThread(record.threadId));
    const created = newRunRecord({ ...record, ...(fields ?? {}) }, Date.now());
    this.#statement(
      `INSERT INTO runs (id, thread_id, task, status, request, pid, host, owner, idempotency_key, request_hash, started_at, starts, eval_id, worker, forked_from, waits_for, created_at, updated_at)
       VALUES (@id, @threadId, @task, @status, @request, @pid, @host, @owner, @idempotencyKey, @requestHash, @startedAt, @starts, @evalId, @worker, @forkedFrom, @waitsFor, @now, @now)`,
    ).run({
      id: created.id,
      threadId: created.threadId,
      task: created.task,
      status: created.status,
      request: JSON.stringify(created.request),
      pid: created.pid,
      host: created.host,
      owner: created.owner,
      idempotencyKey: created.idempotencyKey,
      requestHash: created.requestHash,
      startedAt: created.startedAt,
      starts: created.starts,
      evalId: created.evalId,
      worker: created.worker,
      forkedFrom: created.forkedFrom === null ? null : JSON.stringify(created.forkedFrom),
      waitsFor: created.waitsFor,
      now: created.createdAt,
    });
    return created;
  }

  async update(id: string, patch: RunPatch, options: UpdateRunOptions = {}): Promise<boolean> {
    const { sql, values } = runUpdate(id, patch, options, Date.now());
    const update = this.#statement(sql);
    // Written at once, resolved once on disk: the commit's fsync runs off the event loop (durably).
    // Another reader sees the change before it is synced; it survives a killed process (the WAL
    // frame is written), and a client that acts on a status at once finds what it promises: a run
    // that says running is driven here from before that write (the executor counts it active
    // first), and a drive that wrote where its run ends or rests says so (`onEnding`), so a cancel
    // or an answer waits for it to finish recording that (server/run-executor.ts, `settle`).
    if (patch.status === undefined && patch.waitsFor !== null) return (await durably(this.#db, () => update.run(values))).changes > 0;
    // A change of status and what it brings (waiters released, a webhook's delivery) commit together.
    const changed = await durably(this.#db, this.#db.transaction(() => {
      const before = (this.#statement("SELECT status FROM runs WHERE id = ?").get(id) as { status: string } | undefined)?.status;
      if (update.run(values).changes === 0) return undefined;
      const row = this.#statement("SELECT * FROM runs WHERE id = ?").get(id);
      const after = row === undefined ? undefined : RunRow.parse(row);
      const consequences = after === undefined || patch.status === undefined ? undefined : consequencesOf(before, after);
      const released = consequences?.release
        ? (this.#statement("UPDATE runs SET waits_for = NULL, updated_at = @now WHERE waits_for = @id RETURNING id, thread_id, owner, status").all({ id, now: values.updatedAt }) as ReleasedRow[])
        : [];
      if (consequences?.delivery) this.#statement(`${DELIVERY_INSERT} (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(deliveryValues(consequences.delivery) as never);
      return { before, after, released };
    }));
    if (!changed) return false;
    this.#handOff(changed.before, changed.after, changed.released);
    return true;
  }

  /** Tells the run queue what the committed change means for it. */
  #handOff(before: string | undefined, after: RunRecord | undefined, released: ReleasedRow[]): void {
    if (!this.#queue || !after) return;
    // Queued again here (a person's answer, which goes on before its owner's new ones; a run taken
    // up): this process drives it. Still queued and no longer waiting: only if this queue parked it.
    if (after.status === "queued" && before !== undefined && before !== "queued") this.#queue.offer(queuedRunOf(after), before === "interrupted");
    else if (after.status === "queued") this.#queue.released(queuedRunOf(after));
    else this.#queue.withdraw(after.id);
    for (const row of released) if (row.status === "queued") this.#queue.released({ runId: row.id, threadId: row.thread_id, owner: row.owner });
  }

  async getMany(ids: string[]): Promise<RunRecord[]> {
    if (ids.length === 0) return [];
    return this.#db
      .prepare(`SELECT * FROM runs WHERE id IN (${ids.map(() => "?").join(", ")})`)
      .all(...ids)
      .map((row) => RunRow.parse(row));
  }

  async get(id: string): Promise<RunRecord | undefined> {
    const row = this.#statement("SELECT * FROM runs WHERE id = ?").get(id);
    return row === undefined ? undefined : RunRow.parse(row);
  }

  async supersededAmong(ids: string[]): Promise<string[]> {
    const found: string[] = [];
    for (let start = 0; start < ids.length; start += 500) {
      const chunk = ids.slice(start, start + 500);
      const rows = this.#db.prepare(`SELECT id FROM runs WHERE id IN (${chunk.map(() => "?").join(", ")}) AND superseded_by IS NOT NULL`).all(...chunk) as Array<{ id: string }>;
      found.push(...rows.map((row) => row.id));
    }
    return found;
  }

  async latestForThread(threadId: string): Promise<RunRecord | undefined> {
    return this.#latestForThread(threadId);
  }

  #latestForThread(threadId: string): RunRecord | undefined {
    // Found in the thread's index alone (a covering search), then read by rowid: the same query
    // reading whole rows in the index's order cost five to eight times as much, and every run asks it.
    const latest = this.#statement("SELECT rowid AS row FROM runs WHERE thread_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1").get(threadId) as { row: number } | undefined;
    if (latest === undefined) return undefined;
    const row = this.#statement("SELECT * FROM runs WHERE rowid = ?").get(latest.row);
    return row === undefined ? undefined : RunRow.parse(row);
  }

  async list(options: RunListOptions = {}): Promise<RunRecord[]> {
    const { where, values } = filters(options);
    const order = options.order === "updated" ? "updated_at DESC, id DESC" : "created_at DESC, rowid DESC";
    const sql = `SELECT * FROM runs ${where} ORDER BY ${order} LIMIT @limit OFFSET @offset`;
    return this.#statement(sql)
      .all({ ...values, limit: options.limit ?? 50, offset: options.offset ?? 0 })
      .map((row) => RunRow.parse(row));
  }

  async page(options: RunPageOptions): Promise<RunPage> {
    const { where, values } = pageFilters(options, "rowid");
    const rows = this.#statement(`SELECT rowid AS row_order, * FROM runs ${where} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`).all({
      ...values,
      limit: options.limit + 1,
      offset: options.offset ?? 0,
    }) as Array<Record<string, unknown>>;
    return pageOf(rows, options.limit);
  }

  async count(options: RunFilter = {}, atMost?: number): Promise<number> {
    const { where, values } = filters(options);
    const sql = atMost === undefined ? `SELECT COUNT(*) AS n FROM runs ${where}` : `SELECT COUNT(*) AS n FROM (SELECT 1 FROM runs ${where} LIMIT @atMost)`;
    const row = this.#statement(sql).get(atMost === undefined ? values : { ...values, atMost }) as { n: number };
    return row.n;
  }

  async findByIdempotencyKey(owner: string, idempotencyKey: string): Promise<RunRecord | undefined> {
    const row = this.#statement("SELECT * FROM runs WHERE owner = @owner AND idempotency_key = @idempotencyKey").get({ owner, idempotencyKey });
    return row === undefined ? undefined : RunRow.parse(row);
  }

  async recordCrash(id: string): Promise<number> {
    const row = this.#statement("UPDATE runs SET crashes = crashes + 1, updated_at = @now WHERE id = @id RETURNING crashes").get({ id, now: Date.now() }) as { crashes: number } | undefined;
    return row?.crashes ?? 0;
  }

  async listUnsettled(): Promise<RunRecord[]> {
    return this.#statement(UNSETTLED.api)
      .all([] as never)
      .map((row) => RunRow.parse(row));
  }

  async listUnsettledOfEval(evalId: string): Promise<RunRecord[]> {
    return this.#statement(UNSETTLED.ofEval)
      .all({ evalId })
      .map((row) => RunRow.parse(row));
  }
}
