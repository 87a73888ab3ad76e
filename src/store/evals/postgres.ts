import type pg from "pg";
import { evalUpdate, type EvalPatch, type EvalRecord, EvalRow, type EvalStatus, type EvalStore, type NewEval } from "./contract.js";
import { positional } from "../database/placeholders.js";

const parse = (row: unknown): EvalRecord => EvalRow.parse(row);

/** The evals table on Postgres. */
export class PostgresEvalStore implements EvalStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async create(record: NewEval): Promise<EvalRecord> {
    const now = Date.now();
    await this.#pool.query(
      `INSERT INTO evals (id, owner, name, status, provider, total, min_pass_rate, concurrency, suite, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
      [record.id, record.owner, record.name, record.status, record.provider, record.total, record.minPassRate, record.concurrency, JSON.stringify(record.suite), now],
    );
    return { ...record, passed: 0, failed: 0, results: null, error: null, createdAt: now, updatedAt: now, finishedAt: null };
  }

  async update(id: string, patch: EvalPatch, options: { ifStatus?: readonly EvalStatus[] } = {}): Promise<boolean> {
    const { sql, values } = evalUpdate(id, patch, options.ifStatus, Date.now());
    const result = await this.#pool.query(positional(sql, values));
    return (result.rowCount ?? 0) > 0;
  }

  async get(id: string): Promise<EvalRecord | undefined> {
    const { rows } = await this.#pool.query("SELECT * FROM evals WHERE id = $1", [id]);
    return rows[0] === undefined ? undefined : parse(rows[0]);
  }

  async list(options: { owner?: string; limit?: number; offset?: number } = {}): Promise<EvalRecord[]> {
    const owned = options.owner !== undefined;
    const { rows } = await this.#pool.query(
      `SELECT * FROM evals ${owned ? "WHERE owner = $3" : ""} ORDER BY created_at DESC, row_order DESC LIMIT $1 OFFSET $2`,
      [options.limit ?? 20, options.offset ?? 0, ...(owned ? [options.owner] : [])],
    );
    return rows.map(parse);
  }

  async count(options: { owner?: string } = {}): Promise<number> {
    const owned = options.owner !== undefined;
    const { rows } = await this.#pool.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM evals ${owned ? "WHERE owner = $1" : ""}`, owned ? [options.owner] : []);
    return rows[0]?.n ?? 0;
  }

  async listUnsettled(): Promise<EvalRecord[]> {
    const { rows } = await this.#pool.query("SELECT * FROM evals WHERE owner IS NOT NULL AND status IN ('queued', 'running') ORDER BY created_at, row_order");
    return rows.map(parse);
  }
}
