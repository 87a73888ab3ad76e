import type pg from "pg";
import { isTroupeError, SystemError } from "../core/errors.js";
import type { AuditStore } from "./audit/contract.js";
import { prepareDataDir } from "./database/data-dir.js";
import type { Store, StoreOptions } from "./contract.js";
import { memoryOf, memoryOptionsOf } from "./memory/memories.js";
import type { RunStore } from "./runs/contract.js";
import type { RunStatsStore } from "./stats/contract.js";
import { PostgresAuditStore } from "./audit/postgres.js";
import { TroupePostgresSaver } from "./checkpoints/postgres.js";
import { PgControlChannel, PgWorkerRegistry } from "./queue/postgres-control.js";
import { createPool, isConnectionError, parseDatabaseUrl, redactUrl, unreachable } from "./database/postgres.js";
import { migratePostgres } from "./database/migrator.js";
import { PostgresEvalStore } from "./evals/postgres.js";
import { PostgresEventStore } from "./events/postgres.js";
import { PostgresMemoryStore } from "./memory/postgres.js";
import { Notifications } from "./database/postgres-notifications.js";
import { PostgresRunStore } from "./runs/postgres.js";
import { PgBossRunQueue } from "./queue/postgres.js";
import { PostgresRemoteTasks } from "./remote-tasks/postgres.js";
import { PostgresMcpCredentials } from "./mcp-credentials/postgres.js";
import { PostgresFileLabels } from "./file-labels/postgres.js";
import { PostgresStash } from "./stash/postgres.js";
import { PgThreadLocks } from "./locks/postgres.js";
import { PostgresGrantStore } from "./grants/postgres.js";
import { PostgresRetentionStore } from "./retention/postgres.js";
import { PostgresRunStatsStore } from "./stats/postgres.js";
import { PostgresScheduleStore } from "./schedules/postgres.js";
import { PostgresWebhookOutbox } from "./webhooks/postgres.js";
import { PostgresAgentProtocolStore } from "./agent-protocol/postgres.js";
import { PgBossWebhookQueue } from "./webhooks/postgres-queue.js";
import { PgBossScheduleQueue } from "./schedules/postgres-queue.js";

/** The Postgres store, with the parts the contract suite and the scale-out tests look at. */
export interface PostgresStore extends Store {
  readonly kind: "postgres";
  readonly pool: pg.Pool;
  readonly queue: PgBossRunQueue;
  readonly threads: PgThreadLocks;
  /** Webhook deliveries as pg-boss jobs (troupe serve and troupe worker send them). */
  readonly webhookQueue: PgBossWebhookQueue;
  /** Schedules' ticks as pg-boss jobs, made by pg-boss's scheduler (troupe serve runs it). */
  readonly scheduleQueue: PgBossScheduleQueue;
  readonly url: string;
}

/** Wraps what fails while opening: a connection failure is the deployment's (exit 2), the rest a system fault. */
function openFailure(url: string, error: unknown): unknown {
  if (isTroupeError(error)) return error;
  if (isConnectionError(error)) return unreachable(url, error);
  return new SystemError("database_unavailable", `cannot open the database at ${redactUrl(url)}: ${(error as Error).message}`, { url: redactUrl(url) }, { cause: error });
}

/**
 * Opens troupe's store on Postgres: one pool for every table, LangGraph's PostgresSaver for the
 * checkpoints, pg-boss for the run queue, one LISTEN connection, one session for thread locks.
 * troupe's schema, the checkpointer's and pg-boss's are migrated at once (one process at a time).
 */
export async function openPostgresStore(options: StoreOptions & { databaseUrl: string; migrate?: boolean }): Promise<PostgresStore> {
  const url = parseDatabaseUrl(options.databaseUrl);
  const directory = prepareDataDir(options.dataDir, true);
  const leaseSeconds = options.leaseSeconds ?? 30;
  const pool = createPool(url, options.poolSize ?? 20);
  const notifications = new Notifications(url);
  const queue = new PgBossRunQueue({ url, pool, notifications, leaseSeconds, supervise: true });
  const checkpointer = new TroupePostgresSaver(pool);
  const threads = new PgThreadLocks(url);
  const webhookQueue = new PgBossWebhookQueue(() => queue.boss, notifications);
  const scheduleQueue = new PgBossScheduleQueue(() => queue.boss, url);
  try {
    await pool.query("SELECT 1");
    await migratePostgres(pool, redactUrl(url), async () => {
      await checkpointer.setup();
      await queue.start();
      await webhookQueue.start();
      await scheduleQueue.start();
    });
  } catch (error) {
    await queue.stop();
    await pool.end().catch(() => {});
    throw openFailure(url, error);
  }
  // One connection for event appends (one call at a time), not waiting for the disk (see PostgresEventStore).
  const eventAppends = createPool(url, 1, "troupe-events", { synchronous_commit: "off" });
  const events = new PostgresEventStore(pool, notifications, eventAppends);
  const stash = new PostgresStash(pool);
  const audit = new PostgresAuditStore(pool);
  const { memoryStore, memories } = memoryOf(new PostgresMemoryStore(pool, memoryOptionsOf(options)), options);
  let closed: Promise<void> | undefined;
  return {
    kind: "postgres",
    directory,
    location: redactUrl(url),
    pool,
    checkpointer,
    runs: new PostgresRunStore(pool, queue, webhookQueue),
    events,
    stash,
    audit,
    evals: new PostgresEvalStore(pool),
    threads,
    memoryStore,
    memories,
    remoteTasks: new PostgresRemoteTasks(pool),
    mcpCredentials: new PostgresMcpCredentials(pool),
    fileLabels: new PostgresFileLabels(pool),
    queue,
    runQueue: queue,
    webhookQueue,
    scheduleQueue,
    url,
    grants: new PostgresGrantStore(pool),
    webhooks: new PostgresWebhookOutbox(pool),
    schedules: new PostgresScheduleStore(pool, scheduleQueue),
    agentProtocol: new PostgresAgentProtocolStore(pool),
    stats: new PostgresRunStatsStore(pool),
    retention: new PostgresRetentionStore(pool, async () => {
      await Promise.all([events.flush(), stash.flush(), audit.flush()]);
    }),
    control: new PgControlChannel(pool, notifications),
    workers: new PgWorkerRegistry(pool, leaseSeconds),
    ping: async () => {
      await pool.query("SELECT 1");
    },
    close: () => {
      closed ??= (async () => {
        await Promise.all([events.flush(), stash.flush(), audit.flush()]).catch(() => {});
        await threads.close();
        await scheduleQueue.stopTimekeeping();
        await notifications.close();
        await queue.stop();
        await eventAppends.end().catch(() => {});
        await pool.end().catch(() => {});
      })();
      return closed;
    },
  };
}

/**
 * Reads runs or the audit trail without migrating anything (lookups that must not write): a
 * pool of one connection, closed after; undefined when troupe's tables are not there yet.
 */
export async function withPostgresReadOnly<T>(databaseUrl: string, table: "runs" | "audit" | "reflections", read: (parts: { runs: RunStore; audit: AuditStore; stats: RunStatsStore }) => Promise<T>): Promise<T | undefined> {
  const url = parseDatabaseUrl(databaseUrl);
  const pool = createPool(url, 2, "troupe-lookup");
  try {
    let exists: boolean;
    try {
      const { rows } = await pool.query<{ found: boolean }>("SELECT to_regclass($1) IS NOT NULL AS found", [table]);
      exists = rows[0]?.found ?? false;
    } catch (error) {
      throw openFailure(url, error);
    }
    if (!exists) return undefined;
    return await read({ runs: new PostgresRunStore(pool, undefined), audit: new PostgresAuditStore(pool), stats: new PostgresRunStatsStore(pool) });
  } finally {
    await pool.end().catch(() => {});
  }
}

/** `troupe migrate`: brings troupe's schema, the checkpointer's and pg-boss's up to date and closes. */
export async function migratePostgresDatabase(databaseUrl: string, dataDir: string): Promise<{ location: string }> {
  const store = await openPostgresStore({ databaseUrl, dataDir });
  await store.close();
  return { location: store.location };
}
