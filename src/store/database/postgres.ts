import pg from "pg";
import { ConfigError, SystemError } from "../../core/errors.js";

/**
 * troupe's own schema on Postgres (the checkpointer and pg-boss keep theirs). Versions are
 * Postgres's own, applied by set under an advisory lock, so processes starting together migrate once.
 */
const MIGRATIONS: Array<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  task TEXT NOT NULL,
  status TEXT NOT NULL,
  stop_reason TEXT,
  request TEXT NOT NULL,
  answer TEXT,
  error TEXT,
  metrics TEXT,
  interrupt TEXT,
  pid INTEGER,
  host TEXT,
  active_ms BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  finished_at BIGINT,
  owner TEXT,
  idempotency_key TEXT,
  request_hash TEXT,
  suspended TEXT,
  pending_decision TEXT,
  started_at BIGINT,
  starts INTEGER NOT NULL DEFAULT 0,
  crashes INTEGER NOT NULL DEFAULT 0,
  eval_id TEXT,
  worker TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS runs_thread ON runs (thread_id, created_at, row_order);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at, row_order);
CREATE UNIQUE INDEX IF NOT EXISTS runs_idempotency ON runs (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_owner ON runs (owner, created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE INDEX IF NOT EXISTS runs_eval ON runs (eval_id) WHERE eval_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  type TEXT NOT NULL,
  at BIGINT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS stash (
  run_id TEXT NOT NULL,
  subtask_id TEXT NOT NULL,
  value BYTEA NOT NULL,
  bytes BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, subtask_id)
);
CREATE TABLE IF NOT EXISTS stash_items (
  run_id TEXT NOT NULL,
  subtask_id TEXT NOT NULL,
  item_index INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  round INTEGER NOT NULL,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  output TEXT,
  error TEXT,
  duration_ms BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, subtask_id, item_index)
);
CREATE TABLE IF NOT EXISTS audit (
  id BIGSERIAL PRIMARY KEY,
  at BIGINT NOT NULL,
  run_id TEXT,
  thread_id TEXT,
  subtask_id TEXT,
  agent TEXT NOT NULL,
  principal TEXT,
  tool TEXT NOT NULL,
  args TEXT NOT NULL,
  decision TEXT NOT NULL,
  status TEXT NOT NULL,
  level TEXT NOT NULL,
  grant_info TEXT,
  reason TEXT,
  result_preview TEXT,
  error_code TEXT,
  error TEXT,
  duration_ms DOUBLE PRECISION NOT NULL,
  attempts INTEGER NOT NULL,
  cached INTEGER NOT NULL,
  call_id TEXT,
  effect TEXT,
  outcome TEXT
);
CREATE INDEX IF NOT EXISTS audit_run ON audit (run_id, id);
CREATE INDEX IF NOT EXISTS audit_agent ON audit (agent, id);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);
CREATE INDEX IF NOT EXISTS audit_call ON audit (call_id, id) WHERE call_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit_started ON audit (run_id, id) WHERE status = 'started';
CREATE TABLE IF NOT EXISTS evals (
  id TEXT PRIMARY KEY,
  owner TEXT,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  provider TEXT NOT NULL,
  total INTEGER NOT NULL,
  passed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  min_pass_rate DOUBLE PRECISION NOT NULL,
  concurrency INTEGER NOT NULL,
  suite TEXT NOT NULL,
  results TEXT,
  error TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  finished_at BIGINT,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS evals_owner ON evals (owner, created_at);
CREATE TABLE IF NOT EXISTS workers (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  concurrency INTEGER NOT NULL,
  held INTEGER NOT NULL DEFAULT 0,
  takeovers BIGINT NOT NULL DEFAULT 0,
  draining BOOLEAN NOT NULL DEFAULT FALSE,
  started_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  stopped_at BIGINT
);
-- Appends a batch of events in one call: numbered per stream by the database (under a lock per
-- stream, taken in order, so any process may append), and a notification per stream on commit.
CREATE OR REPLACE FUNCTION troupe_append_events(p_streams TEXT[], p_types TEXT[], p_ats BIGINT[], p_data TEXT[])
RETURNS TABLE (out_stream TEXT, out_seq BIGINT) LANGUAGE plpgsql AS $$
DECLARE
  counters JSONB := '{}'::jsonb;
  stream_id TEXT;
  top BIGINT;
  next_seq BIGINT;
  i INTEGER;
BEGIN
  FOR stream_id IN SELECT DISTINCT u FROM unnest(p_streams) AS u ORDER BY u LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended('troupe.events:' || stream_id, 0));
    SELECT COALESCE(MAX(e.seq), 0) INTO top FROM events e WHERE e.run_id = stream_id;
    counters := counters || jsonb_build_object(stream_id, top);
  END LOOP;
  FOR i IN 1 .. COALESCE(array_length(p_streams, 1), 0) LOOP
    stream_id := p_streams[i];
    next_seq := (counters ->> stream_id)::BIGINT + 1;
    counters := jsonb_set(counters, ARRAY[stream_id], to_jsonb(next_seq));
    INSERT INTO events (run_id, seq, type, at, data) VALUES (stream_id, next_seq, p_types[i], p_ats[i], p_data[i]);
    out_stream := stream_id;
    out_seq := next_seq;
    RETURN NEXT;
  END LOOP;
  FOR stream_id IN SELECT jsonb_object_keys(counters) LOOP
    PERFORM pg_notify('troupe_events', stream_id);
  END LOOP;
END;
$$;`,
  },
  {
    // Long-term memory (memory-store.ts): items by namespace (labels joined by ".") and key, the
    // value as JSON text, the text it is found by with its tsvector (English stemming, as SQLite's
    // porter tokenizer), its expiry, and a Float32 vector of embedding_model when one is configured.
    version: 2,
    sql: `
CREATE TABLE IF NOT EXISTS memory_items (
  id BIGSERIAL PRIMARY KEY,
  prefix TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  text TEXT NOT NULL,
  search TSVECTOR GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  expires_at BIGINT,
  embedding BYTEA,
  embedding_model TEXT,
  UNIQUE (prefix, key)
);
CREATE INDEX IF NOT EXISTS memory_items_search ON memory_items USING GIN (search);
CREATE INDEX IF NOT EXISTS memory_items_updated ON memory_items (prefix text_pattern_ops, updated_at);
CREATE INDEX IF NOT EXISTS memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL;`,
  },
  {
    // Issue 26: the task a remote A2A agent made for one of troupe's calls (SQLite migration 16).
    version: 6,
    sql: `
CREATE TABLE IF NOT EXISTS remote_tasks (
  call_id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  url TEXT NOT NULL,
  task_id TEXT NOT NULL,
  context_id TEXT NOT NULL,
  created_at BIGINT NOT NULL
);`,
  },
  {
    // Issue 27 (SQLite's 18): forks, busy threads, runtime grants, the webhook outbox (delivered by
    // pg-boss jobs; the rows are what runs show reads), schedules, reflections, subtask durations,
    // retention's state.
    version: 7,
    sql: `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS forked_from TEXT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS waits_for TEXT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS superseded_by TEXT;
CREATE INDEX IF NOT EXISTS runs_waits_for ON runs (waits_for) WHERE waits_for IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_retention ON runs (status, updated_at);
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  level TEXT NOT NULL,
  conditions TEXT,
  expires_at BIGINT,
  granted_by TEXT NOT NULL,
  reason TEXT,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT,
  revoked_by TEXT,
  revoke_reason TEXT,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS grants_agent ON grants (agent, created_at);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  event TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  delivered_at BIGINT,
  row_order BIGSERIAL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_run ON webhook_deliveries (run_id, created_at);
CREATE TABLE IF NOT EXISTS schedules (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  cron TEXT NOT NULL,
  timezone TEXT NOT NULL,
  task TEXT NOT NULL,
  request TEXT NOT NULL,
  owner TEXT,
  catch_up TEXT NOT NULL,
  source TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  last_tick BIGINT,
  last_run_id TEXT,
  last_fired_at BIGINT
);
CREATE TABLE IF NOT EXISTS reflections (
  run_id TEXT NOT NULL,
  iteration INTEGER NOT NULL,
  type TEXT NOT NULL,
  passed INTEGER NOT NULL,
  confidence DOUBLE PRECISION NOT NULL,
  at BIGINT NOT NULL,
  PRIMARY KEY (run_id, iteration)
);
CREATE INDEX IF NOT EXISTS reflections_at ON reflections (at);
CREATE TABLE IF NOT EXISTS duration_stats (
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  count BIGINT NOT NULL,
  total_ms DOUBLE PRECISION NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (agent, tool)
);
CREATE TABLE IF NOT EXISTS maintenance (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at BIGINT NOT NULL
);`,
  },
  {
    // Issue 23: provenance labels (src/core/provenance.ts) on stashed results and map items, as
    // JSON text; NULL on rows stored before labels, which read as untrusted (unlabelled).
    version: 5,
    sql: `
ALTER TABLE stash ADD COLUMN IF NOT EXISTS label TEXT;
ALTER TABLE stash_items ADD COLUMN IF NOT EXISTS label TEXT;`,
  },
];

/** The newest schema version of troupe's Postgres tables. */
export const POSTGRES_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((migration) => migration.version));

/** The advisory lock key under which processes migrate one at a time. */
const MIGRATION_LOCK = "troupe.migrate";

/** A database URL as it may be shown: the password replaced. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unreadable URL)";
  }
}

/** Checks a database URL's form; a bad one is a ConfigError naming the variable. */
export function parseDatabaseUrl(url: string, source = "TROUPE_DATABASE_URL"): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError("database_url_invalid", `${source}: not a URL (expected postgres://user:password@host:5432/database)`, { variable: source });
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new ConfigError("database_url_invalid", `${source}: ${parsed.protocol.replace(/:$/, "")} is not a Postgres URL (expected postgres://user:password@host:5432/database)`, {
      variable: source,
    });
  }
  if (!parsed.hostname && !parsed.searchParams.get("host")) {
    throw new ConfigError("database_url_invalid", `${source}: the URL names no host (expected postgres://user:password@host:5432/database)`, { variable: source });
  }
  return url;
}

export { isConnectionError } from "./errors.js";

/** A connection error as troupe reports it: the database named (without its password), exit 2 from the CLI. */
export function unreachable(url: string, error: unknown): ConfigError {
  const reason = (error as { code?: string }).code ?? (error as Error).message;
  return new ConfigError("database_unreachable", `cannot reach the database at ${redactUrl(url)} (${reason})`, { url: redactUrl(url) });
}

/** Numbers come back as numbers: BIGINT timestamps and counts are below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === 20) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as never);
  }) as typeof pg.types.getTypeParser,
};

/** A pool on the database, with BIGINT read as numbers and a name the database shows in pg_stat_activity. */
export function createPool(url: string, max: number, name = "troupe"): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, types, application_name: name, connectionTimeoutMillis: 10_000, keepAlive: true });
  // An idle client's error (the server restarted) is reported on the pool; its next checkout reconnects.
  pool.on("error", () => {});
  return pool;
}

/** A single connection outside the pool (LISTEN, session locks), same settings. */
export function createClient(url: string, name: string): pg.Client {
  return new pg.Client({ connectionString: url, types, application_name: name, connectionTimeoutMillis: 10_000, keepAlive: true });
}

/** Runs `work` in a transaction on a client of the pool. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Applies the migrations the database lacks, one process at a time (an advisory lock), each in
 * its own transaction; refuses a database migrated by a newer troupe. Returns the versions applied.
 */
export async function migratePostgres(pool: pg.Pool, location: string, extra: () => Promise<void> = async () => {}): Promise<number[]> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [MIGRATION_LOCK]);
    try {
      await client.query("CREATE TABLE IF NOT EXISTS troupe_schema (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)");
      const applied = (await client.query<{ version: number }>("SELECT version FROM troupe_schema")).rows.map((row) => row.version);
      const unknown = applied.filter((version) => !MIGRATIONS.some((migration) => migration.version === version));
      if (unknown.length > 0) {
        throw new ConfigError(
          "database_too_new",
          `${location} has troupe schema version ${Math.max(...unknown)}, newer than this troupe knows (${POSTGRES_SCHEMA_VERSION}): upgrade troupe, or use another database`,
          { versions: unknown, known: POSTGRES_SCHEMA_VERSION },
        );
      }
      const done: number[] = [];
      for (const migration of MIGRATIONS) {
        if (applied.includes(migration.version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(migration.sql);
          await client.query("INSERT INTO troupe_schema (version, applied_at) VALUES ($1, $2)", [migration.version, Date.now()]);
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK").catch(() => {});
          throw new SystemError("migration_failed", `migration ${migration.version} of ${location} failed: ${(error as Error).message}`, { version: migration.version }, { cause: error });
        }
        done.push(migration.version);
      }
      // The checkpointer's and the queue's own setups, under the same lock.
      await extra();
      return done;
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    client.release();
  }
}
