import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, type CheckpointMetadata, copyCheckpoint, type PendingWrite, WRITES_IDX_MAP } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import type { Statement } from "better-sqlite3";

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
 * run). Reads (`getTuple`, `list`) are the stock ones.
 */
export class TroupeCheckpointer extends SqliteSaver {
  #statements: Statements | undefined;

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
      writeRows: this.db.transaction((statement: Statement<WriteRow>, rows: WriteRow[]) => {
        for (const row of rows) statement.run(...row);
      }),
      relaxed: this.db.prepare("PRAGMA synchronous = NORMAL"),
      full: this.db.prepare("PRAGMA synchronous = FULL"),
    };
    return this.#statements;
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    const statements = this.#prepared();
    const threadId = config.configurable?.thread_id as string | undefined;
    if (!threadId) throw new Error('Missing "thread_id" field in passed "config.configurable".');
    const namespace = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const [[type, body], [metadataType, metadataBody]] = await Promise.all([this.serde.dumpsTyped(copyCheckpoint(checkpoint)), this.serde.dumpsTyped(metadata)]);
    if (type !== metadataType) throw new Error("Failed to serialized checkpoint and metadata to the same type.");
    const parentId = config.configurable?.checkpoint_id as string | undefined;
    statements.insertCheckpoint.run(threadId, namespace, checkpoint.id, parentId, type, body, metadataBody);
    return { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const statements = this.#prepared();
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
    const special = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    statements.relaxed.run();
    try {
      statements.writeRows(special ? statements.replaceWrite : statements.keepWrite, rows);
    } finally {
      statements.full.run();
    }
  }
}
