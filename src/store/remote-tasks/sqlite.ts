import type { Statement } from "better-sqlite3";
import type { RemoteTaskRecord, RemoteTasks } from "../../core/remote-tasks.js";
import type { Sqlite } from "../database/sqlite.js";
import { recordOf, type RemoteTaskRow, rowOf } from "./contract.js";

/** The remote tasks of troupe's calls to A2A agents (migration 16), on the synced connection: a row is on disk before the wait begins. */
export class SqliteRemoteTasks implements RemoteTasks {
  readonly #find: Statement<[string], RemoteTaskRow>;
  readonly #insert: Statement<RemoteTaskRow>;

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
