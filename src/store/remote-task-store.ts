import type { Statement } from "better-sqlite3";
import type { RemoteTaskRecord, RemoteTasks } from "../core/remote-tasks.js";
import type { Sqlite } from "./database.js";

interface Row {
  call_id: string;
  agent: string;
  url: string;
  task_id: string;
  context_id: string;
  created_at: number;
}

export const rowOf = (record: RemoteTaskRecord): Row => ({
  call_id: record.callId,
  agent: record.agent,
  url: record.url,
  task_id: record.taskId,
  context_id: record.contextId,
  created_at: record.createdAt,
});

export const recordOf = (row: Row): RemoteTaskRecord => ({
  callId: row.call_id,
  agent: row.agent,
  url: row.url,
  taskId: row.task_id,
  contextId: row.context_id,
  createdAt: Number(row.created_at),
});

/** The remote tasks of troupe's calls to A2A agents (migration 16), on the synced connection: a row is on disk before the wait begins. */
export class SqliteRemoteTasks implements RemoteTasks {
  readonly #find: Statement<[string], Row>;
  readonly #insert: Statement<Row>;

  constructor(db: Sqlite) {
    this.#find = db.prepare("SELECT call_id, agent, url, task_id, context_id, created_at FROM remote_tasks WHERE call_id = ?");
    this.#insert = db.prepare(
      "INSERT INTO remote_tasks (call_id, agent, url, task_id, context_id, created_at) VALUES (@call_id, @agent, @url, @task_id, @context_id, @created_at) ON CONFLICT (call_id) DO NOTHING",
    );
  }

  async find(callId: string): Promise<RemoteTaskRecord | undefined> {
    const row = this.#find.get(callId);
    return row ? recordOf(row) : undefined;
  }

  async save(record: RemoteTaskRecord): Promise<void> {
    this.#insert.run(rowOf(record));
  }
}
