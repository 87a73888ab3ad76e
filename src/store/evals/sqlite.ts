import type { Sqlite } from "../database/sqlite.js";
import { evalUpdate, type EvalPatch, type EvalRecord, EvalRow, type EvalStatus, type EvalStore, type NewEval } from "./contract.js";

/** The evals table in SQLite. */
export class SqliteEvalStore implements EvalStore {
  readonly #db: Sqlite;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  async create(record: NewEval): Promise<EvalRecord> {
    const now = Date.now();
    this.#db
      .prepare(
        `INSERT INTO evals (id, owner, name, status, provider, total, min_pass_rate, concurrency, suite, created_at, updated_at)
         VALUES (@id, @owner, @name, @status, @provider, @total, @minPassRate, @concurrency, @suite, @now, @now)`,
      )
      .run({ ...record, suite: JSON.stringify(record.suite), now });
    return { ...record, passed: 0, failed: 0, results: null, error: null, createdAt: now, updatedAt: now, finishedAt: null };
  }

  async update(id: string, patch: EvalPatch, options: { ifStatus?: readonly EvalStatus[] } = {}): Promise<boolean> {
    const { sql, values } = evalUpdate(id, patch, options.ifStatus, Date.now());
    return this.#db.prepare(sql).run(values).changes > 0;
  }

  async get(id: string): Promise<EvalRecord | undefined> {
    const row = this.#db.prepare("SELECT * FROM evals WHERE id = ?").get(id);
    return row === undefined ? undefined : EvalRow.parse(row);
  }

  async list(options: { owner?: string; limit?: number; offset?: number } = {}): Promise<EvalRecord[]> {
    const where = options.owner !== undefined ? "WHERE owner = @owner" : "";
    return this.#db
      .prepare(`SELECT * FROM evals ${where} ORDER BY created_at DESC, rowid DESC LIMIT @limit OFFSET @offset`)
      .all({ owner: options.owner, limit: options.limit ?? 20, offset: options.offset ?? 0 })
      .map((row) => EvalRow.parse(row));
  }

  async count(options: { owner?: string } = {}): Promise<number> {
    const where = options.owner !== undefined ? "WHERE owner = @owner" : "";
    return (this.#db.prepare(`SELECT COUNT(*) AS n FROM evals ${where}`).get({ owner: options.owner }) as { n: number }).n;
  }

  async listUnsettled(): Promise<EvalRecord[]> {
    return this.#db
      .prepare("SELECT * FROM evals WHERE owner IS NOT NULL AND status IN ('queued', 'running') ORDER BY created_at, rowid")
      .all()
      .map((row) => EvalRow.parse(row));
  }
}
