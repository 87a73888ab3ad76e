import type { Command } from "commander";
import { out } from "../io.js";

interface MigrateFlags {
  dataDir?: string;
  databaseUrl?: string;
  json?: boolean;
}

/** `troupe migrate`: brings the database's schema up to date (troupe's tables, the checkpointer's, the run queue's) and exits. */
export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("bring the database up to date (SQLite in the data directory, or Postgres with TROUPE_DATABASE_URL) and exit")
    .option("--data-dir <dir>", "the data directory (default: TROUPE_DATA_DIR or ./.troupe)")
    .option("--database-url <url>", "postgres://…: migrate Postgres instead (default: TROUPE_DATABASE_URL)")
    .option("--json", "print the result as one JSON object")
    .action(async (flags: MigrateFlags) => {
      const { lookupTarget } = await import("../engine-flags.js");
      const target = await lookupTarget(flags);
      const { openStore } = await import("../../store/index.js");
      const started = performance.now();
      const store = await openStore(target);
      await store.close();
      const result = { backend: store.kind, database: store.location, ms: Math.round(performance.now() - started) };
      if (flags.json) out(JSON.stringify(result));
      else out(`troupe migrate: ${store.kind === "postgres" ? "Postgres" : "SQLite"} at ${store.location} is up to date (${result.ms} ms)`);
    });
}
