import { existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { DATABASE_FILE, type Sqlite } from "../src/store/database/sqlite.js";
import type { SqliteStore } from "../src/store/index.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { buildRawGraph, openRawCheckpointer, RAW_DATABASE_FILE, runRawGraph } from "./raw-graph.js";
import { createScriptedTroupe, expectCompleted, LAYERED_PLAN, scriptFor } from "./scripts.js";
import { processWrittenBytes, type Summary, summarize, timed, withTempDir } from "./support.js";

export interface CheckpointCostOptions {
  runs: number;
  warmupRuns: number;
  concurrency: number;
}

export interface CheckpointCostFigures {
  label: string;
  /** Rows in `checkpoints` for the run's thread: one per superstep (plus the input checkpoint). */
  supersteps: number;
  /** Rows in `writes` for the run's thread: the pending writes of every task. */
  writeRows: number;
  msPerStep: Summary;
  /** Growth of the database file and its -wal file per step, over a run that starts with an empty WAL. */
  fileBytesPerStep: Summary;
  /** Bytes handed to write() per step (Linux /proc/self/io), or null where that is not available. */
  writtenBytesPerStep: Summary | null;
  /** Serialized checkpoint, metadata and write payloads per step: what the saver stores, before SQLite pages. */
  payloadBytesPerStep: Summary;
}

export interface CheckpointCostReport {
  runs: number;
  durability: "sync";
  troupe: CheckpointCostFigures;
  raw: CheckpointCostFigures;
  /** What troupe's file and write() figures include besides checkpoints. */
  note: string;
}

interface Measurement {
  supersteps: number;
  writeRows: number;
  ms: number;
  fileBytes: number;
  writtenBytes: number | undefined;
  payloadBytes: number;
}

function fileBytes(databasePath: string): number {
  return [databasePath, `${databasePath}-wal`].reduce((sum, file) => sum + (existsSync(file) ? statSync(file).size : 0), 0);
}

function threadFigures(db: Sqlite, threadId: string): { supersteps: number; writeRows: number; payloadBytes: number } {
  const checkpoints = db
    .prepare("SELECT COUNT(*) AS count, COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) AS bytes FROM checkpoints WHERE thread_id = ?")
    .get(threadId) as { count: number; bytes: number };
  const writes = db.prepare("SELECT COUNT(*) AS count, COALESCE(SUM(LENGTH(value)), 0) AS bytes FROM writes WHERE thread_id = ?").get(threadId) as {
    count: number;
    bytes: number;
  };
  return { supersteps: checkpoints.count, writeRows: writes.count, payloadBytes: checkpoints.bytes + writes.bytes };
}

/**
 * Measures a pair of runs. The bytes run starts with an empty WAL, so the WAL's size afterwards
 * is what that run appended. Growing a file costs more per sync than overwriting one, so the
 * timed run then restarts the WAL in place (the file keeps its size): it writes the way a
 * long-lived database does, over WAL space that is already allocated.
 */
async function measureRun(db: Sqlite, databasePath: string, run: () => Promise<string>): Promise<Measurement> {
  db.pragma("wal_checkpoint(TRUNCATE)");
  const bytesBefore = fileBytes(databasePath);
  const writtenBefore = await processWrittenBytes();
  const threadId = await run();
  const writtenAfter = await processWrittenBytes();
  const bytesAfter = fileBytes(databasePath);
  const written = writtenBefore === undefined || writtenAfter === undefined ? undefined : writtenAfter - writtenBefore;
  db.pragma("wal_checkpoint(RESTART)");
  const { ms } = await timed(run);
  return { ...threadFigures(db, threadId), ms, fileBytes: bytesAfter - bytesBefore, writtenBytes: written };
}

function figures(label: string, measurements: Measurement[]): CheckpointCostFigures {
  const perStep = (pick: (measurement: Measurement) => number) => summarize(measurements.map((measurement) => pick(measurement) / measurement.supersteps));
  const first = measurements[0] as Measurement;
  return {
    label,
    supersteps: first.supersteps,
    writeRows: first.writeRows,
    msPerStep: perStep((measurement) => measurement.ms),
    fileBytesPerStep: perStep((measurement) => measurement.fileBytes),
    writtenBytesPerStep: measurements.every((measurement) => measurement.writtenBytes !== undefined)
      ? perStep((measurement) => measurement.writtenBytes ?? 0)
      : null,
    payloadBytesPerStep: perStep((measurement) => measurement.payloadBytes),
  };
}

async function measureTroupe(directory: string, options: CheckpointCostOptions): Promise<CheckpointCostFigures> {
  const steps = scriptFor(LAYERED_PLAN, { runs: 2 * options.runs + options.warmupRuns });
  const { troupe, model } = await createScriptedTroupe(directory, steps);
  const databasePath = path.join(troupe.store.directory, DATABASE_FILE);
  const run = async (): Promise<string> => {
    const result = await troupe.run({ task: "Combine the figures of the layered plan", concurrency: options.concurrency });
    expectCompleted(result, model, "checkpoint cost");
    return result.threadId;
  };
  try {
    for (let round = 0; round < options.warmupRuns; round += 1) await run();
    const measurements: Measurement[] = [];
    for (let round = 0; round < options.runs; round += 1) measurements.push(await measureRun((troupe.store as SqliteStore).db, databasePath, run));
    return figures("troupe", measurements);
  } finally {
    troupe.close();
  }
}

async function measureRaw(directory: string, options: CheckpointCostOptions): Promise<CheckpointCostFigures> {
  const model = new ScriptedChatModel({ steps: scriptFor(LAYERED_PLAN, { runs: 2 * options.runs + options.warmupRuns }) });
  const checkpointer = openRawCheckpointer(directory);
  const graph = buildRawGraph(model, checkpointer.saver);
  const run = async (): Promise<string> => (await runRawGraph(graph, "Combine the figures of the layered plan", options.concurrency)).threadId;
  try {
    for (let round = 0; round < options.warmupRuns; round += 1) await run();
    const measurements: Measurement[] = [];
    for (let round = 0; round < options.runs; round += 1) measurements.push(await measureRun(checkpointer.db, path.join(directory, RAW_DATABASE_FILE), run));
    return figures("raw LangGraph", measurements);
  } finally {
    checkpointer.close();
  }
}

/** Benchmark 3: what `sync` durability writes and costs per superstep, troupe beside the raw graph. */
export async function measureCheckpointCost(options: CheckpointCostOptions): Promise<CheckpointCostReport> {
  return withTempDir("troupe-bench-checkpoints-", async (directory) => {
    const troupeDirectory = path.join(directory, "troupe");
    const rawDirectory = path.join(directory, "raw");
    mkdirSync(rawDirectory, { recursive: true });
    return {
      runs: options.runs,
      durability: "sync",
      troupe: await measureTroupe(troupeDirectory, options),
      raw: await measureRaw(rawDirectory, options),
      note: "troupe's file and write() bytes also include its run record and event log (one row per event) in the same database; ms per step is the whole run's time over its supersteps",
    };
  });
}
