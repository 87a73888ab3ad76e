import type pg from "pg";
import type { RemoteTaskRecord, RemoteTasks } from "../../core/remote-tasks.js";
import { recordOf, rowOf } from "./contract.js";

/** The remote tasks of troupe's calls to A2A agents, on Postgres (migration 6). */
export class PostgresRemoteTasks implements RemoteTasks {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async find(callId: string): Promise<RemoteTaskRecord | undefined> {
    const { rows } = await this.#pool.query<Parameters<typeof recordOf>[0]>("SELECT call_id, agent, url, task_id, context_id, created_at FROM remote_tasks WHERE call_id = $1", [callId]);
    return rows[0] ? recordOf(rows[0]) : undefined;
  }

  async save(record: RemoteTaskRecord): Promise<void> {
    const row = rowOf(record);
    await this.#pool.query(
      "INSERT INTO remote_tasks (call_id, agent, url, task_id, context_id, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (call_id) DO NOTHING",
      [row.call_id, row.agent, row.url, row.task_id, row.context_id, row.created_at],
    );
  }
}
