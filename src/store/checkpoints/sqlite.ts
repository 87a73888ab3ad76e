import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, type CheckpointListOptions, type CheckpointMetadata, type CheckpointTuple, copyCheckpoint, type PendingWrite, WRITES_IDX_MAP } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import type { Statement } from "better-sqlite3";
import { committed } from "../database/wal-sync.js";
import { RowFailure, TurnBatch } from "../turn-batch.js";

type CheckpointRow = [threadId: string, namespace: string, checkpointId: string, parentId: string | undefined, type: string, checkpoint: Uint8Array, metadata: Uint8Array];
type WriteRow = [threadId: string, namespace: string, checkpointId: string, taskId: string, index: number, channel: string, type: string, value: Uint8Array];

interface Statements {
  insertCheckpoint: Statement<CheckpointRow>;
  /** Special writes (errors, interrupts, resume values) replace an earlier one; a task's ordinary writes are kept once. */
  replaceWrite: Statement<WriteRow>;
  keepWrite: Statement<WriteRow>;
  writeRows: (statement: Statement<WriteRow>, rows: WriteRow[]) => void;
  relaxed: Statement<[]>;
  full: Statement<[]>;
}

/**
 * LangGraph's SQLite checkpointer, same tables and rows, with its two writes compiled once.
 * The stock saver prepares its INSERT statements anew on every `put` and `putWrites` — two or
 * three times per superstep, a parse and plan of the SQL each time (about 6% of a zero-latency
 * run). Reads (`getTuple`, `list`) are the stock ones, after the checkpoints waiting to be
 * written are.
 *
 * Checkpoints are group-committed, and their fsync runs off the event loop: those put during one
 * turn of the event loop (the supersteps of the runs a server drives side by side) are written in
 * one transaction, each in a savepoint of its own, committed at `synchronous = NORMAL`, and the
 * WAL is then synced on a libuv thread (`committed`, database/wal-sync.ts). Each `put` resolves
 * once its row is committed (a killed process keeps it), while its sync runs: the next superstep
 * does not wait for the disk. What a power cut could take is work done again, never an effect: a
 * call with an effect waits until everything before it is on disk (its write-ahead row's
 * `onDisk`, tools/write-ahead.ts), and a run's status is acknowledged only once synced, which
 * covers its checkpoints. A FULL commit blocked the event loop for its fsync (seven a run, a third
 * of a zero-latency run's CPU profile); waiting for each sync off the loop still kept a
 * superstep from starting for the disk's fdatasync, seven a run (2.3 ms of a 18 ms run on this
 * machine's disk).
 */
export class TroupeCheckpointer extends SqliteSaver {
  #statements: Statements | undefined;
  readonly #checkpoints = new TurnBatch<CheckpointRow, void>((rows) => this.#writeCheckpoints(rows));
  /** Tasks' writes, one transaction a turn (unsynced), each call's rows in a savepoint of their own. */
  readonly #writes = new TurnBatch<{ special: boolean; rows: WriteRow[] }, void>((calls) => this.#writeWrites(calls));

  /** The tables (made by the stock setup) and the compiled writes, once. */
  #prepared(): Statements {
    if (this.#statements) return this.#statements;
    this.setup();
    const columns = "(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    this.#statements = {
      insertCheckpoint: this.db.prepare(
        "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      replaceWrite: this.db.prepare(`INSERT OR REPLACE INTO writes ${columns}`),
      keepWrite: this.db.prepare(`INSERT OR IGNORE INTO writes ${columns}`),
      writeRows: (statement: Statement<WriteRow>, rows: WriteRow[]) => {
        for (const row of rows) statement.run(...row);
      },
      relaxed: this.db.prepare("PRAGMA synchronous = NORMAL"),
      full: this.db.prepare("PRAGMA synchronous = FULL"),
    };
    return this.#statements;
  }

  /** One transaction for the checkpoints of a turn (a row that fails fails alone), resolved once committed; its sync runs on. */
  #writeCheckpoints(rows: CheckpointRow[]): Promise<Array<void | RowFailure>> {
    const { insertCheckpoint } = this.#prepared();
    return committed(
      this.db,
      this.db.transaction(() =>
        rows.map((row) => {
          try {
            this.db.transaction(() => insertCheckpoint.run(...row))();
            return undefined;
          } catch (error) {
            return new RowFailure(error);
          }
        }),
      ),
    );
  }

  /** The tasks' writes of a turn, committed unsynced in one transaction (a call that fails fails alone). */
  #writeWrites(calls: Array<{ special: boolean; rows: WriteRow[] }>): Array<void | RowFailure> {
    const statements = this.#prepared();
    statements.relaxed.run();
    try {
      return this.db.transaction(() =>
        calls.map(({ special, rows }) => {
          try {
            this.db.transaction(() => statements.writeRows(special ? statements.replaceWrite : statements.keepWrite, rows))();
            return undefined;
          } catch (error) {
            return new RowFailure(error);
          }
        }),
      )();
    } finally {
      statements.full.run();
    }
  }

  /** Writes the checkpoints and tasks' writes waiting for the end of this turn (before a read, or a close). */
  async flush(): Promise<void> {
    await Promise.all([this.#writes.flush(), this.#checkpoints.flush()]);
  }

  async #beforeRead(): Promise<void> {
    if (this.#writes.pending > 0 || this.#checkpoints.pending > 0) await this.flush();
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    await this.#beforeRead();
    return super.getTuple(config);
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    await this.#beforeRead();
    yield* super.list(config, options);
  }

  override async deleteThread(threadId: string): Promise<void> {
    await this.#beforeRead();
    return super.deleteThread(threadId);
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (!threadId) throw new Error('Missing "thread_id" field in passed "config.configurable".');
    const namespace = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const [[type, body], [metadataType, metadataBody]] = await Promise.all([this.serde.dumpsTyped(copyCheckpoint(checkpoint)), this.serde.dumpsTyped(metadata)]);
    if (type !== metadataType) throw new Error("Failed to serialized checkpoint and metadata to the same type.");
    const parentId = config.configurable?.checkpoint_id as string | undefined;
    await this.#checkpoints.add([threadId, namespace, checkpoint.id, parentId, type, body, metadataBody]);
    return { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const threadId = config.configurable?.thread_id as string | undefined;
    const checkpointId = config.configurable?.checkpoint_id as string | undefined;
    if (!threadId) throw new Error("Missing thread_id field in config.configurable.");
    if (!checkpointId) throw new Error("Missing checkpoint_id field in config.configurable.");
    const namespace = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const rows = await Promise.all(
      writes.map(async ([channel, value], index): Promise<WriteRow> => {
        const [type, body] = await this.serde.dumpsTyped(value);
        return [threadId, namespace, checkpointId, taskId, WRITES_IDX_MAP[channel] ?? index, channel, type, body];
      }),
    );
    await this.#writes.add({ special: writes.every(([channel]) => channel in WRITES_IDX_MAP), rows });
  }
}
