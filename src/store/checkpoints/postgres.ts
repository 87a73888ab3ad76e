import type { RunnableConfig } from "@langchain/core/runnables";
import { type ChannelVersions, type Checkpoint, type CheckpointMetadata, type PendingWrite, WRITES_IDX_MAP } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type pg from "pg";

const WRITE_COLUMNS = "(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)";
const WRITE_ROWS = "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::bytea[])";

/** Column-wise arrays of rows, for one `unnest`. */
function columns<Row extends unknown[]>(rows: Row[], width: number): unknown[][] {
  return Array.from({ length: width }, (_, column) => rows.map((row) => row[column] ?? null));
}

/**
 * LangGraph's Postgres checkpointer, same tables, rows and reads, with its writes in one
 * statement each. The stock saver writes a checkpoint as a transaction of one INSERT per changed
 * channel's blob and one for the checkpoint, and a task's writes as a transaction of one INSERT
 * per write: some two hundred round trips for a short run, most of a worker's time in the
 * database. Here a checkpoint is one `WITH … INSERT … INSERT` (its blobs and itself, atomically)
 * and a task's writes one multi-row INSERT.
 */
export class TroupePostgresSaver extends PostgresSaver {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    super(pool);
    this.#pool = pool;
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    if (config.configurable === undefined) throw new Error('Missing "configurable" field in "config" param');
    const { thread_id: threadId, checkpoint_ns: namespace = "", checkpoint_id: parentId } = config.configurable as { thread_id: string; checkpoint_ns?: string; checkpoint_id?: string };
    const [blobs, serializedMetadata] = await Promise.all([this._dumpBlobs(threadId, namespace, checkpoint.channel_values, newVersions), this._dumpMetadata(metadata)]);
    await this.#pool.query(
      `WITH blobs AS (
         INSERT INTO public.checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[])
         ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
         RETURNING 1)
       INSERT INTO public.checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
       VALUES ($7, $8, $9, $10, $11, $12)
       ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata`,
      [...columns(blobs, 6), threadId, namespace, checkpoint.id, parentId ?? null, this._dumpCheckpoint(checkpoint), serializedMetadata],
    );
    return { configurable: { thread_id: threadId, checkpoint_ns: namespace, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const configurable = config.configurable as { thread_id?: string; checkpoint_ns?: string; checkpoint_id?: string } | undefined;
    if (writes.length === 0) return;
    const rows = await this._dumpWrites(configurable?.thread_id as string, configurable?.checkpoint_ns ?? "", configurable?.checkpoint_id as string, taskId, writes);
    // Special writes (errors, interrupts, resume values) replace an earlier one; a task's ordinary writes are kept once.
    const special = writes.every(([channel]) => channel in WRITES_IDX_MAP);
    const conflict = special
      ? "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob"
      : "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING";
    await this.#pool.query(`INSERT INTO public.checkpoint_writes ${WRITE_COLUMNS} ${WRITE_ROWS} ${conflict}`, columns(rows, 8));
  }
}
