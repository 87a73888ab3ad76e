/**
 * Bulk loads for the scale section: the big sizes go straight into the store, in its real shape
 * (the rows a run leaves, the jobs the run store makes), much faster than through the API.
 *
 * Finished runs are clones of real runs made first through the engine on the same store: every
 * row keyed by the template's run id or thread id (the run, its events, stash values,
 * reflections, its thread's checkpoints and pending writes) is copied under a new id by one
 * INSERT … SELECT per table, timestamps moved to the clone's. Queued runs are written as the run
 * store writes an API submission (owner, request, a thread of its own or a turn of a busy thread
 * waiting for the one before it), and on Postgres their pg-boss jobs through the queue's own
 * `sendMany` in the same transaction.
 */
import type pg from "pg";
import type { PostgresStore } from "../../src/store/postgres-store.js";
import { refreshStatistics, type Sqlite } from "../../src/store/database/sqlite.js";

/** A store the loader writes to: SQLite's connection or Postgres's pool. */
export type BulkTarget = { kind: "sqlite"; db: Sqlite } | { kind: "postgres"; store: PostgresStore };

/** Runs per INSERT … SELECT round (one transaction): big enough to be fast, small enough for SQLite's log (about 600 MB a round with every checkpoint). */
const BATCH = 10_000;

/** The tables whose rows belong to one run (by run id) or to its thread (by thread id). */
const CLONED: Array<{ table: string; key: "id" | "run_id" | "thread_id" }> = [
  { table: "runs", key: "id" },
  { table: "events", key: "run_id" },
  { table: "stash", key: "run_id" },
  { table: "stash_items", key: "run_id" },
  { table: "reflections", key: "run_id" },
  { table: "audit", key: "run_id" },
  { table: "webhook_deliveries", key: "run_id" },
  // SQLite's checkpointer (TroupeCheckpointer).
  { table: "checkpoints", key: "thread_id" },
  { table: "writes", key: "thread_id" },
  // LangGraph's PostgresSaver.
  { table: "checkpoint_blobs", key: "thread_id" },
  { table: "checkpoint_writes", key: "thread_id" },
];

/** Columns holding a moment (ms since the epoch): moved by the clone's offset from the template. */
const MOMENTS = new Set(["created_at", "updated_at", "finished_at", "started_at", "at"]);

/** The status of the n-th clone: one in fifty failed, one in a hundred cancelled, the rest completed. */
export function cloneStatus(n: number): "completed" | "failed" | "cancelled" {
  if (n % 50 === 7) return "failed";
  if (n % 100 === 3) return "cancelled";
  return "completed";
}

const STATUS_SQL = "CASE WHEN b.n % 50 = 7 THEN 'failed' WHEN b.n % 100 = 3 THEN 'cancelled' ELSE 'completed' END";

/** A table's columns a copy writes (Postgres: not the generated ones, not the serials), or none when the table is missing. */
async function columnsOf(target: BulkTarget, table: string): Promise<string[]> {
  if (target.kind === "sqlite") return (target.db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as Array<{ name: string }>).map((row) => row.name);
  const { rows } = await target.store.pool.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' AND COALESCE(column_default, '') NOT LIKE 'nextval(%'
      ORDER BY ordinal_position`,
    [table],
  );
  return rows.map((row) => row.column_name);
}

const text = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/**
 * An id in UUID form, as troupe makes run and thread ids, whose first eight digits are the clone's
 * number: the rest random, the whole in the order the clones are written, so a big load appends
 * to the indexes instead of writing all over them (a lookup by id costs the same either way).
 */
function uuidSql(target: BulkTarget): string {
  if (target.kind === "postgres") return "lpad(to_hex(n), 8, '0') || substr(gen_random_uuid()::text, 9)";
  const hex = (bytes: number) => `lower(hex(randomblob(${bytes})))`;
  return `printf('%08x', n) || '-' || ${hex(2)} || '-4' || substr(${hex(2)}, 2) || '-8' || substr(${hex(2)}, 2) || '-' || ${hex(6)}`;
}

/** The numbers [from, to) as rows `n` (a recursive CTE on SQLite, generate_series on Postgres). */
function numbers(target: BulkTarget, from: number, to: number): string {
  return target.kind === "postgres"
    ? `SELECT n FROM generate_series(${from}::bigint, ${to - 1}::bigint) AS n`
    : `WITH RECURSIVE seq(n) AS (SELECT ${from} UNION ALL SELECT n + 1 FROM seq WHERE n < ${to - 1}) SELECT n FROM seq`;
}

export interface Template {
  runId: string;
  threadId: string;
  createdAt: number;
}

/**
 * Which clones keep their thread's checkpoints: one in `every`, and every clone numbered `allFrom`
 * or more (the oldest, which a gc collects first). Checkpoints are most of a finished run's bytes
 * (about 45 KB of its 60 KB on SQLite): a million runs with all of them need some 60 GB.
 */
export interface CheckpointShare {
  every: number;
  allFrom: number;
}

/**
 * Adds finished runs numbered [from, to) as clones of `template` (a finished run with its rows in
 * the same store), owned by `owner`, one a minute going back from `newest`: the oldest are the
 * ones a gc cutoff collects first. The clones' statuses follow `cloneStatus`; their threads'
 * checkpoints follow `checkpoints` (all of them when absent).
 */
export async function cloneFinishedRuns(
  target: BulkTarget,
  template: Template,
  range: { from: number; to: number },
  options: { owner: string; newest: number; checkpoints?: CheckpointShare },
): Promise<void> {
  const columns = new Map<string, string[]>();
  for (const { table } of CLONED) columns.set(table, await columnsOf(target, table));
  const bulk = target.kind === "postgres" ? "bulk_ids" : "temp.bulk_ids";
  for (let start = range.from; start < range.to; start += BATCH) {
    const end = Math.min(range.to, start + BATCH);
    const statements: string[] = [
      target.kind === "postgres"
        ? "CREATE TEMP TABLE IF NOT EXISTS bulk_ids (n BIGINT PRIMARY KEY, run_id TEXT, thread_id TEXT, created_at BIGINT, status TEXT) ON COMMIT DELETE ROWS"
        : "CREATE TEMP TABLE IF NOT EXISTS bulk_ids (n INTEGER PRIMARY KEY, run_id TEXT, thread_id TEXT, created_at INTEGER, status TEXT)",
      `DELETE FROM ${bulk}`,
      `INSERT INTO ${bulk} (n, run_id, thread_id, created_at, status)
         SELECT n, 'run-' || ${uuidSql(target)}, 'thread-' || ${uuidSql(target)}, ${options.newest} - n * 60000, ${STATUS_SQL.replaceAll("b.n", "n")} FROM (${numbers(target, start, end)}) AS numbered`,
    ];
    for (const { table, key } of CLONED) {
      const names = columns.get(table) ?? [];
      if (names.length === 0) continue;
      const source = key === "thread_id" ? template.threadId : template.runId;
      const values = names.map((name) => cloneColumn(table, name, key, template, options.owner));
      const share = options.checkpoints;
      const only = key === "thread_id" && table !== "runs" && share ? ` AND (b.n % ${share.every} = 0 OR b.n >= ${share.allFrom})` : "";
      statements.push(`INSERT INTO ${table} (${names.join(", ")}) SELECT ${values.join(", ")} FROM ${bulk} b CROSS JOIN ${table} x WHERE x.${key} = ${text(source)}${only}`);
    }
    await inTransaction(target, statements);
    // troupe refreshes SQLite's statistics of the runs table every 5,000 runs it creates; these
    // bypass it. Left as they were (2 runs, after a gc of the clones), the planner reads the
    // template run by scanning every run once per clone: a load that grows with its square.
    if (target.kind === "sqlite") refreshStatistics(target.db);
  }
}

/** The value a clone's column gets: its own ids, its moments, its status and what goes with it; the rest as the template has it. */
function cloneColumn(table: string, name: string, key: string, template: Template, owner: string): string {
  if (name === key) return key === "thread_id" ? "b.thread_id" : "b.run_id";
  if (name === "thread_id") return "b.thread_id";
  if (name === "run_id") return "b.run_id";
  if (MOMENTS.has(name)) return `CASE WHEN x.${name} IS NULL THEN NULL ELSE x.${name} - ${template.createdAt} + b.created_at END`;
  if (table === "runs") {
    if (name === "status") return "b.status";
    if (name === "owner") return text(owner);
    if (name === "stop_reason") return "b.status";
    if (name === "error") return "CASE WHEN b.status = 'failed' THEN 'the worker failed: a figure was missing' WHEN b.status = 'cancelled' THEN 'cancelled by its owner' ELSE x.error END";
    if (name === "task") return "x.task || ' (' || b.n || ')'";
    if (name === "request") return `replace(x.request, ${text(template.threadId)}, b.thread_id)`;
  }
  if (table === "events" && name === "data") {
    return `CASE WHEN x.type = 'run-end' AND b.status <> 'completed' THEN replace(replace(x.data, '"status":"completed"', '"status":"' || b.status || '"'), '"stopReason":"completed"', '"stopReason":"' || b.status || '"') ELSE x.data END`;
  }
  return `x.${name}`;
}

async function inTransaction(target: BulkTarget, statements: string[]): Promise<void> {
  if (target.kind === "sqlite") {
    target.db.transaction(() => {
      for (const statement of statements) target.db.exec(statement);
    })();
    return;
  }
  const client = await target.store.pool.connect();
  try {
    await client.query("BEGIN");
    for (const statement of statements) await client.query(statement);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** One queued run of the depth benchmark. */
export interface QueuedSpec {
  id: string;
  threadId: string;
  owner: string;
  waitsFor: string | null;
  createdAt: number;
}

/**
 * `count` runs waiting across `keys` API keys (round-robin) as API submissions leave them: every
 * other run continues its key's conversation (one thread per key) and waits for the thread's run
 * before it (`--on-busy enqueue`, the default); the others start a thread of their own.
 */
export function queuedRuns(count: number, keys: number, prefix: string, now: number): QueuedSpec[] {
  const runs: QueuedSpec[] = [];
  const lastOnThread = new Map<string, string>();
  for (let n = 0; n < count; n += 1) {
    const owner = `key-${String(n % keys).padStart(4, "0")}`;
    const shared = n % 2 === 0;
    const threadId = shared ? `thread-${prefix}-${owner}` : `thread-${prefix}-${n}`;
    const id = `run-${prefix}-${n}`;
    runs.push({ id, threadId, owner, waitsFor: shared ? (lastOnThread.get(threadId) ?? null) : null, createdAt: now - count + n });
    if (shared) lastOnThread.set(threadId, id);
  }
  return runs;
}

function requestOf(run: QueuedSpec): string {
  return JSON.stringify({ task: `Look the figure up for ${run.id}, then use it`, threadId: run.threadId });
}

/** Writes queued runs into SQLite's runs table (a server started on it afterwards offers them to its queue). */
export function loadQueuedSqlite(db: Sqlite, runs: QueuedSpec[]): void {
  const insert = db.prepare(
    "INSERT INTO runs (id, thread_id, task, status, request, owner, waits_for, created_at, updated_at) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?)",
  );
  for (let start = 0; start < runs.length; start += BATCH) {
    db.transaction(() => {
      for (const run of runs.slice(start, start + BATCH)) insert.run(run.id, run.threadId, `Look the figure up for ${run.id}, then use it`, requestOf(run), run.owner, run.waitsFor, run.createdAt, run.createdAt);
    })();
  }
}

/** Writes queued runs into Postgres's runs table with the jobs of those not waiting for another, as the run store does, a batch per transaction. */
export async function loadQueuedPostgres(store: PostgresStore, runs: QueuedSpec[]): Promise<void> {
  for (let start = 0; start < runs.length; start += BATCH) {
    const batch = runs.slice(start, start + BATCH);
    const client: pg.PoolClient = await store.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query(
        `INSERT INTO runs (id, thread_id, task, status, request, owner, waits_for, created_at, updated_at)
         SELECT id, thread_id, 'Look the figure up for ' || id || ', then use it', 'queued', request, owner, waits_for, created_at, created_at
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[]) AS batch (id, thread_id, request, owner, waits_for, created_at)`,
        [batch.map((run) => run.id), batch.map((run) => run.threadId), batch.map(requestOf), batch.map((run) => run.owner), batch.map((run) => run.waitsFor), batch.map((run) => run.createdAt)],
      );
      await store.queue.sendMany(
        client,
        batch.filter((run) => run.waitsFor === null).map((run) => ({ runId: run.id, threadId: run.threadId, owner: run.owner })),
      );
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}

/** A fact's words: a few from a small common vocabulary, the rest from a large one, as notes people keep read. */
const COMMON = ["customer", "prefers", "deploy", "report", "figure", "team", "weekly", "budget", "region", "contact"];

function factText(n: number): string {
  const rare = (salt: number) => `w${((n * 7_919 + salt * 104_729) % 50_000).toString(36)}`;
  return `The ${COMMON[n % COMMON.length]} ${rare(1)} ${COMMON[(n * 3) % COMMON.length]} ${rare(2)} for account ${n}: ${rare(3)} ${rare(4)} ${rare(5)}.`;
}

/** A search for the bench: two common words and two of the large vocabulary (found in a few facts at any size). */
export function factQuery(n: number): string {
  return `${COMMON[n % COMMON.length]} ${COMMON[(n * 3) % COMMON.length]} w${((n * 7_919 + 104_729) % 50_000).toString(36)} account ${n}`;
}

/**
 * Adds memory facts [from, to) in `namespace` as `troupe memory` keeps them (the value's JSON,
 * the text it is found by; SQLite's full-text index through its triggers, Postgres's tsvector
 * column), from a template fact saved through the store first.
 */
export async function addFacts(target: BulkTarget, prefix: string, template: { key: string }, range: { from: number; to: number }): Promise<void> {
  for (let start = range.from; start < range.to; start += BATCH) {
    const end = Math.min(range.to, start + BATCH);
    const texts = Array.from({ length: end - start }, (_, index) => factText(start + index));
    if (target.kind === "sqlite") {
      const source = target.db.prepare("SELECT value, created_at FROM memory_items WHERE prefix = ? AND key = ?").get(prefix, template.key) as { value: string; created_at: number };
      const insert = target.db.prepare("INSERT INTO memory_items (prefix, key, value, text, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)");
      target.db.transaction(() => {
        texts.forEach((fact, index) => {
          const value = JSON.stringify({ ...(JSON.parse(source.value) as Record<string, unknown>), text: fact });
          insert.run(prefix, `m-bulk-${start + index}`, value, fact, source.created_at - (start + index), source.created_at - (start + index));
        });
      })();
      continue;
    }
    await target.store.pool.query(
      `INSERT INTO memory_items (prefix, key, value, text, created_at, updated_at)
       SELECT $1, 'm-bulk-' || (n + $3), jsonb_set(t.value::jsonb, '{text}', to_jsonb(f.fact))::text, f.fact, t.created_at - (n + $3), t.created_at - (n + $3)
         FROM unnest($4::text[]) WITH ORDINALITY AS f (fact, n1), LATERAL (SELECT n1 - 1 AS n) AS numbered,
              memory_items t WHERE t.prefix = $1 AND t.key = $2`,
      [prefix, template.key, start, texts],
    );
  }
}
