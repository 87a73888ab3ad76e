import type pg from "pg";
import { ConflictError } from "../../core/errors.js";
import {
  consequencesOf,
  type CreateRunOptions,
  filters,
  type NewRun,
  newRunRecord,
  pageFilters,
  pageOf,
  type RunCreation,
  type RunFilter,
  type RunListOptions,
  type RunPage,
  type RunPageOptions,
  type RunPatch,
  type RunRecord,
  RunRow,
  type RunStore,
  runUpdate,
  unsettledQueries,
  type UpdateRunOptions,
} from "./contract.js";
import { positional } from "../database/placeholders.js";
import { RowFailure, TurnBatch } from "../turn-batch.js";
import { DELIVERY_INSERT, deliveryValues } from "../webhooks/contract.js";
import type { PgBossRunQueue } from "../queue/postgres.js";

/** Makes the job that sends a webhook delivery, in the caller's transaction (webhook-queue.ts). */
export interface DeliveryJobs {
  send(client: pg.ClientBase, deliveryId: string): Promise<void>;
}

const UNSETTLED = unsettledQueries("row_order");

const parse = (row: unknown): RunRecord => RunRow.parse(row);

/**
 * The runs table on Postgres. A run written as `queued` — created so, or set so by an update — is
 * also a job of the run queue, made in the same transaction: what an API process acknowledged is
 * both stored and queued, or neither. Runs created in one turn of the event loop share one
 * transaction (a savepoint each, so one refused fails alone), and creating a run takes a
 * transaction lock on its thread, so two API processes cannot both start a run on one thread.
 */
export class PostgresRunStore implements RunStore {
  readonly #pool: pg.Pool;
  readonly #queue: PgBossRunQueue | undefined;
  readonly #deliveries: DeliveryJobs | undefined;
  readonly #creations: TurnBatch<RunCreation, RunRecord>;

  constructor(pool: pg.Pool, queue: PgBossRunQueue | undefined, deliveries?: DeliveryJobs) {
    this.#pool = pool;
    this.#queue = queue;
    this.#deliveries = deliveries;
    this.#creations = new TurnBatch<RunCreation, RunRecord>((creations) => this.#createAll(creations));
  }

  get creationsWaiting(): number {
    return this.#creations.pending;
  }

  create(record: NewRun, options: CreateRunOptions = {}): Promise<RunRecord> {
    return this.#creations.add({ record, check: options.check });
  }

  /**
   * A batch of creations in one transaction and a handful of statements: a creation lock per
   * thread (taken in order), the threads' latest runs, the checks in memory (each creation sees
   * those before it), one multi-row INSERT, and one for the queued runs' jobs. When the INSERT
   * fails (an Idempotency-Key taken meanwhile by another process), the batch is written again row
   * by row, each in a savepoint, so only the offending creation fails.
   */
  async #createAll(creations: RunCreation[]): Promise<Array<RunRecord | RowFailure>> {
    const client = await this.#pool.connect();
    try {
      try {
        await client.query("BEGIN");
        const results = await this.#createBatch(client, creations);
        await client.query("COMMIT");
        return results;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        if ((error as { code?: string }).code !== "23505" && (error as { code?: string }).code !== "40P01") throw error;
      }
      const results: Array<RunRecord | RowFailure> = [];
      await client.query("BEGIN");
      try {
        for (const creation of creations) {
          await client.query("SAVEPOINT creation");
          try {
            results.push(await this.#insert(client, creation));
            await client.query("RELEASE SAVEPOINT creation");
          } catch (error) {
            await client.query("ROLLBACK TO SAVEPOINT creation");
            results.push(new RowFailure(uniqueViolation(error)));
          }
        }
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
      return results;
    } finally {
      client.release();
    }
  }

  async #createBatch(client: pg.PoolClient, creations: RunCreation[]): Promise<Array<RunRecord | RowFailure>> {
    const threads = [...new Set(creations.map((creation) => creation.record.threadId))].sort();
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('troupe.thread-create:' || t, 0)) FROM (SELECT t FROM unnest($1::text[]) AS t ORDER BY t) AS ordered", [threads]);
    const { rows } = await client.query("SELECT DISTINCT ON (thread_id) * FROM runs WHERE thread_id = ANY($1) ORDER BY thread_id, created_at DESC, row_order DESC", [threads]);
    const latest = new Map<string, RunRecord>(rows.map((row) => [String((row as { thread_id: string }).thread_id), parse(row)]));
    const now = Date.now();
    const results: Array<RunRecord | RowFailure> = [];
    const accepted: RunRecord[] = [];
    for (const { record, check } of creations) {
      let fields: Partial<NewRun> | void;
      try {
        fields = check?.(latest.get(record.threadId));
      } catch (error) {
        results.push(new RowFailure(error));
        continue;
      }
      const created = newRunRecord({ ...record, ...(fields ?? {}) }, now);
      latest.set(created.threadId, created);
      accepted.push(created);
      results.push(created);
    }
    if (accepted.length > 0) {
      const values = (pick: (run: RunRecord) => unknown) => accepted.map(pick);
      await client.query(
        `INSERT INTO runs (id, thread_id, task, status, request, pid, host, owner, idempotency_key, request_hash, started_at, starts, eval_id, worker, forked_from, waits_for, created_at, updated_at)
         SELECT *, created_at FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::int[], $13::text[], $14::text[], $16::text[], $17::text[], $15::bigint[])
           AS batch (id, thread_id, task, status, request, pid, host, owner, idempotency_key, request_hash, started_at, starts, eval_id, worker, forked_from, waits_for, created_at)`,
        [
          values((run) => run.id),
          values((run) => run.threadId),
          values((run) => run.task),
          values((run) => run.status),
          values((run) => JSON.stringify(run.request)),
          values((run) => run.pid),
          values((run) => run.host),
          values((run) => run.owner),
          values((run) => run.idempotencyKey),
          values((run) => run.requestHash),
          values((run) => run.startedAt),
          values((run) => run.starts),
          values((run) => run.evalId),
          values((run) => run.worker),
          values((run) => run.createdAt),
          values((run) => (run.forkedFrom === null ? null : JSON.stringify(run.forkedFrom))),
          values((run) => run.waitsFor),
        ],
      );
      // A run waiting for another of its thread gets its job when that one ends (see update).
      const queued = accepted.filter((run) => run.status === "queued" && run.waitsFor === null).map((run) => ({ runId: run.id, threadId: run.threadId, owner: run.owner }));
      await this.#queue?.sendMany(client, queued);
    }
    return results;
  }

  async #insert(client: pg.PoolClient, { record, check }: RunCreation): Promise<RunRecord> {
    // One creation per thread at a time, across processes, until this transaction ends.
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`troupe.thread-create:${record.threadId}`]);
    const latest = await client.query("SELECT * FROM runs WHERE thread_id = $1 ORDER BY created_at DESC, row_order DESC LIMIT 1", [record.threadId]);
    const fields = check?.(latest.rows[0] === undefined ? undefined : parse(latest.rows[0]));
    const created = newRunRecord({ ...record, ...(fields ?? {}) }, Date.now());
    await client.query(
      `INSERT INTO runs (id, thread_id, task, status, request, pid, host, owner, idempotency_key, request_hash, started_at, starts, eval_id, worker, created_at, updated_at, forked_from, waits_for)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16, $17)`,
      [
        created.id,
        created.threadId,
        created.task,
        created.status,
        JSON.stringify(created.request),
        created.pid,
        created.host,
        created.owner,
        created.idempotencyKey,
        created.requestHash,
        created.startedAt,
        created.starts,
        created.evalId,
        created.worker,
        created.createdAt,
        created.forkedFrom === null ? null : JSON.stringify(created.forkedFrom),
        created.waitsFor,
      ],
    );
    if (created.status === "queued" && created.waitsFor === null) await this.#queue?.send(client, { runId: created.id, threadId: created.threadId, owner: created.owner });
    return created;
  }

  async update(id: string, patch: RunPatch, options: UpdateRunOptions = {}): Promise<boolean> {
    const update = runUpdate(id, patch, options, Date.now());
    const statement = positional(`${update.sql} RETURNING *`, update.values);
    // A plain change (no status, or no queue to feed): one statement.
    const released = patch.waitsFor === null;
    if (patch.status === undefined && !released) {
      const result = await this.#pool.query(statement.text, statement.values);
      return (result.rowCount ?? 0) > 0;
    }
    // A change of status and what it brings — the job of a run queued again (a person's decision,
    // a drained run, a waiter released), the jobs of the runs waiting for one that ended, a
    // webhook's delivery — in one transaction.
    const client = await this.#pool.connect();
    try {
      await client.query("BEGIN");
      const before = patch.status === undefined ? undefined : (await client.query<{ status: string }>("SELECT status FROM runs WHERE id = $1 FOR UPDATE", [id])).rows[0]?.status;
      const { rows } = await client.query(statement.text, statement.values);
      const after = rows[0] === undefined ? undefined : parse(rows[0]);
      if (after && after.status === "queued" && after.waitsFor === null && (patch.status === "queued" || released)) await this.#queue?.send(client, { runId: id, threadId: after.threadId, owner: after.owner });
      const consequences = after ? consequencesOf(before, after) : undefined;
      if (consequences?.release) {
        const waiting = await client.query<{ id: string; thread_id: string; status: string; owner: string | null }>(
          "UPDATE runs SET waits_for = NULL, updated_at = $2 WHERE waits_for = $1 RETURNING id, thread_id, status, owner",
          [id, Date.now()],
        );
        await this.#queue?.sendMany(
          client,
          waiting.rows.filter((row) => row.status === "queued").map((row) => ({ runId: row.id, threadId: row.thread_id, owner: row.owner })),
        );
      }
      if (consequences?.delivery) {
        await client.query(`${DELIVERY_INSERT} ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, deliveryValues(consequences.delivery));
        await this.#deliveries?.send(client, consequences.delivery.id);
      }
      await client.query("COMMIT");
      return rows.length > 0;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async get(id: string): Promise<RunRecord | undefined> {
    const { rows } = await this.#pool.query("SELECT * FROM runs WHERE id = $1", [id]);
    return rows[0] === undefined ? undefined : parse(rows[0]);
  }

  async getMany(ids: string[]): Promise<RunRecord[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.#pool.query("SELECT * FROM runs WHERE id = ANY($1)", [ids]);
    return rows.map(parse);
  }

  async supersededAmong(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.#pool.query<{ id: string }>("SELECT id FROM runs WHERE id = ANY($1) AND superseded_by IS NOT NULL", [ids]);
    return rows.map((row) => row.id);
  }

  async latestForThread(threadId: string): Promise<RunRecord | undefined> {
    const { rows } = await this.#pool.query("SELECT * FROM runs WHERE thread_id = $1 ORDER BY created_at DESC, row_order DESC LIMIT 1", [threadId]);
    return rows[0] === undefined ? undefined : parse(rows[0]);
  }

  async list(options: RunListOptions = {}): Promise<RunRecord[]> {
    const { where, values } = filters(options);
    const order = options.order === "updated" ? "updated_at DESC, id DESC" : "created_at DESC, row_order DESC";
    const statement = positional(`SELECT * FROM runs ${where} ORDER BY ${order} LIMIT @limit OFFSET @offset`, {
      ...values,
      limit: options.limit ?? 50,
      offset: options.offset ?? 0,
    });
    const { rows } = await this.#pool.query(statement.text, statement.values);
    return rows.map(parse);
  }

  async page(options: RunPageOptions): Promise<RunPage> {
    const { where, values } = pageFilters(options, "row_order");
    const statement = positional(`SELECT * FROM runs ${where} ORDER BY created_at DESC, row_order DESC LIMIT @limit OFFSET @offset`, {
      ...values,
      limit: options.limit + 1,
      offset: options.offset ?? 0,
    });
    const { rows } = await this.#pool.query(statement.text, statement.values);
    return pageOf(rows as Array<Record<string, unknown>>, options.limit);
  }

  async count(options: RunFilter = {}, atMost?: number): Promise<number> {
    const { where, values } = filters(options);
    const statement = positional(
      atMost === undefined ? `SELECT COUNT(*)::int AS n FROM runs ${where}` : `SELECT COUNT(*)::int AS n FROM (SELECT 1 FROM runs ${where} LIMIT @atMost) AS counted`,
      atMost === undefined ? values : { ...values, atMost },
    );
    const { rows } = await this.#pool.query<{ n: number }>(statement.text, statement.values);
    return rows[0]?.n ?? 0;
  }

  async findByIdempotencyKey(owner: string, idempotencyKey: string): Promise<RunRecord | undefined> {
    const { rows } = await this.#pool.query("SELECT * FROM runs WHERE owner = $1 AND idempotency_key = $2", [owner, idempotencyKey]);
    return rows[0] === undefined ? undefined : parse(rows[0]);
  }

  async recordCrash(id: string): Promise<number> {
    const { rows } = await this.#pool.query<{ crashes: number }>("UPDATE runs SET crashes = crashes + 1, updated_at = $2 WHERE id = $1 RETURNING crashes", [id, Date.now()]);
    return rows[0]?.crashes ?? 0;
  }

  async listUnsettled(): Promise<RunRecord[]> {
    const { rows } = await this.#pool.query(UNSETTLED.api);
    return rows.map(parse);
  }

  async listUnsettledOfEval(evalId: string): Promise<RunRecord[]> {
    const statement = positional(UNSETTLED.ofEval, { evalId });
    const { rows } = await this.#pool.query(statement.text, statement.values);
    return rows.map(parse);
  }
}

/** A second submission with the same Idempotency-Key, from another process at the same moment. */
function uniqueViolation(error: unknown): unknown {
  const { code, constraint } = error as { code?: string; constraint?: string };
  if (code === "23505" && constraint === "runs_idempotency") {
    return new ConflictError("idempotency_key_race", "another request with this Idempotency-Key was accepted at the same moment", { retryable: true });
  }
  return error;
}
