/**
 * History: what a big store costs to read. One store per backend grows through the sizes (10k →
 * 1M finished runs): finished runs as real runs leave them (clones of two runs made through the
 * engine first: the record, its events, its thread's checkpoints and writes, stash values), one
 * in fifty failed and one in a hundred cancelled, all the local principal's, one thread in ten with
 * its checkpoints (and every run the size's gc collects: see CHECKPOINTS_EVERY); and a memory fact per
 * ten runs, spread over a hundred API keys' namespaces and the local one (each at most the
 * 10,000 a namespace holds). At each size a real `troupe serve` answers, each figure the median
 * of repeated calls after a warm-up: the task list's first page, a filtered page (`status=failed`),
 * a page deep in the history (the console's "Older" button followed 500 times: by cursor), a task
 * (`GET /tasks/:id`, the view `runs show` prints) and `troupe runs show --json` as a process, the
 * console's home (the page and its task list), a memory search (repeated, and the first after a
 * write to the namespace, when nothing the store kept serves it); then `gc` of the oldest 10,000
 * runs (with the space given back), timed in-process, and those runs written again.
 */
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { Agent } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { PlannedSubtask } from "../../src/core/plan.js";
import { Troupe } from "../../src/runtime/engine.js";
import { memoryNamespaceFor } from "../../src/runtime/memory-owner.js";
import { openStore, type SqliteStore, type Store } from "../../src/store/index.js";
import type { PostgresStore } from "../../src/store/postgres-store.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { subtask } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { scriptFor } from "../scripts.js";
import { send, startServer } from "../server.js";
import { SCRIPTED_PROVIDER_MODULE, summarize, withTempDir } from "../support.js";
import { addFacts, type BulkTarget, cloneFinishedRuns, factQuery, type Template } from "./bulk-load.js";

const run = promisify(execFile);
const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src/cli/main.js");
const PLAN: PlannedSubtask[] = [subtask("s1", "research", "Look the figure up"), subtask("s2", "execute", "Use the figure", { dependsOn: ["s1"] })];
/** The principal of the open local API: every history run is its. */
const OWNER = "local";
const GC_BATCH = 10_000;
/**
 * One clone in ten keeps its thread's checkpoints, and so does every clone a gc of the size
 * collects: all of them at a million runs would take some 60 GB on SQLite. A thread's checkpoints
 * are read by its id (`runs show`) and deleted with its last run (gc), so the other nine in ten
 * cost the tables' depth, not a figure's work.
 */
const CHECKPOINTS_EVERY = 10;
/** Namespaces the facts spread over besides the local one. */
const OTHER_NAMESPACES = 100;

export interface HistoryPoint {
  runs: number;
  facts: number;
  /** Seconds the bulk load to this size took (from the size before it). */
  loadSeconds: number;
  /** The store's size on disk at this size (SQLite: the file and its log; Postgres: the database). */
  bytes: number;
  /** Figure name → median ms. */
  ms: Record<string, number>;
}

export interface HistoryOptions {
  backend: "sqlite" | "postgres";
  sizes: number[];
  database: (name: string) => Promise<string>;
  drop: (name: string) => Promise<void>;
  log: (line: string) => void;
}

function targetOf(store: Store): BulkTarget {
  return store.kind === "sqlite" ? { kind: "sqlite", db: (store as SqliteStore).db } : { kind: "postgres", store: store as PostgresStore };
}

async function sql(store: Store, text: string, values: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  if (store.kind === "sqlite") {
    const statement = (store as SqliteStore).db.prepare(text.replace(/\$\d+/g, "?"));
    if (statement.reader) return statement.all(...values) as Array<Record<string, unknown>>;
    statement.run(...values);
    return [];
  }
  return (await (store as PostgresStore).pool.query(text, values)).rows as Array<Record<string, unknown>>;
}

/** Two real runs through the engine on the store: the templates of every clone (the first), and the runs `runs show` is asked for. */
async function makeTemplates(store: Store, directory: string): Promise<{ template: Template; shown: string[] }> {
  const model = new ScriptedChatModel({ steps: scriptFor(PLAN, { runs: 2 }), streaming: false });
  const troupe = await Troupe.create({ models: modelSetOf(model), store, dataDir: store.directory, workspace: path.join(directory, "workspace") });
  const shown: string[] = [];
  // Not shut down: that would close the store, which stays open for the loads (and is closed by the caller).
  for (let index = 0; index < 2; index += 1) {
    const result = await troupe.run({ task: `Look the figure up (${index}), then use it` });
    if (result.status !== "completed") throw new Error(`scale/history: the template run ended ${result.status}`);
    shown.push(result.runId);
  }
  await store.events.flush();
  await sql(store, "UPDATE runs SET owner = $1", [OWNER]);
  const [row] = await sql(store, "SELECT id, thread_id, created_at FROM runs WHERE id = $1", [shown[0]]);
  return { template: { runId: String(row?.id), threadId: String(row?.thread_id), createdAt: Number(row?.created_at) }, shown };
}

/** The median of `times` calls after three unmeasured ones. */
async function timedMedian(times: number, call: () => Promise<void>): Promise<number> {
  for (let warm = 0; warm < 3; warm += 1) await call();
  const samples: number[] = [];
  for (let index = 0; index < times; index += 1) {
    const started = performance.now();
    await call();
    samples.push(performance.now() - started);
  }
  return summarize(samples).median;
}

async function expectOk(agent: Agent, port: number, pathName: string): Promise<unknown> {
  const response = await send(agent, port, "GET", pathName);
  if (response.status !== 200) throw new Error(`scale/history: GET ${pathName} answered ${response.status}`);
  return response.status === 200 && !pathName.startsWith("/api/") ? undefined : response.json();
}

/** The figures of one size, from a server started on the store (closed in this process meanwhile). */
async function readFigures(directory: string, env: Record<string, string>, shown: string[], query: string): Promise<Record<string, number>> {
  const server = await startServer(directory, env);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  try {
    const ms: Record<string, number> = {};
    ms["GET /tasks first page"] = await timedMedian(15, async () => void (await expectOk(agent, server.port, "/api/v1/tasks?limit=20")));
    ms["GET /tasks?status=failed"] = await timedMedian(15, async () => void (await expectOk(agent, server.port, "/api/v1/tasks?limit=20&status=failed")));
    // The page 500 pages back (10,000 runs), reached as the console's "Older" button reaches it.
    let deep = "/api/v1/tasks?limit=20";
    for (let page = 0; page < 500; page += 1) {
      const body = (await expectOk(agent, server.port, deep)) as { data: { next_cursor?: string | null; next_offset: number | null } };
      const next = body.data.next_cursor !== undefined ? (body.data.next_cursor === null ? null : `cursor=${encodeURIComponent(body.data.next_cursor)}`) : body.data.next_offset === null ? null : `offset=${body.data.next_offset}`;
      if (next === null) break;
      deep = `/api/v1/tasks?limit=20&${next}`;
    }
    ms["GET /tasks 500 pages back"] = await timedMedian(15, async () => void (await expectOk(agent, server.port, deep)));
    ms["GET /tasks/:id (runs show's view)"] = await timedMedian(15, async () => void (await expectOk(agent, server.port, `/api/v1/tasks/${shown[1]}`)));
    ms["console home (page + task list)"] = await timedMedian(15, async () => {
      await expectOk(agent, server.port, "/");
      await expectOk(agent, server.port, "/api/v1/tasks?limit=20&offset=0");
    });
    const search = `/api/v1/memory?query=${encodeURIComponent(query)}&limit=10`;
    // Repeated (warm): what the store kept at the namespace's version answers it.
    ms["memory search"] = await timedMedian(15, async () => void (await expectOk(agent, server.port, search)));
    // The first search after a write (cold): the namespace's version moved, so nothing kept serves it
    // (the fact written is one fact updated again and again: the namespace does not grow).
    const cold: number[] = [];
    for (let index = 0; index < 18; index += 1) {
      const saved = await send(agent, server.port, "POST", "/api/v1/memory", { text: `A note written between searches (${index}).`, subject: "scale history cold search" });
      if (saved.status !== 200 && saved.status !== 201) throw new Error(`scale/history: POST /api/v1/memory answered ${saved.status}`);
      const started = performance.now();
      await expectOk(agent, server.port, search);
      if (index >= 3) cold.push(performance.now() - started);
    }
    ms["memory search, first after a write"] = summarize(cold).median;
    return ms;
  } finally {
    agent.destroy();
    await server.stop();
  }
}

/** `troupe runs show <id> --json` as a user runs it: the whole process, median of five. */
async function runsShowCli(directory: string, env: Record<string, string>, runId: string): Promise<number> {
  const samples: number[] = [];
  for (let index = 0; index < 6; index += 1) {
    const started = performance.now();
    await run(process.execPath, [CLI, "runs", "show", runId, "--json"], { cwd: directory, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
    if (index > 0) samples.push(performance.now() - started);
  }
  return summarize(samples).median;
}

/** Facts for `runs` runs: one per ten, spread round-robin over the local namespace and the others. */
async function growFacts(store: Store, from: number, to: number): Promise<void> {
  const namespaces = [memoryNamespaceFor(OWNER), ...Array.from({ length: OTHER_NAMESPACES }, (_, index) => memoryNamespaceFor(`key-${String(index).padStart(2, "0")}`))];
  const share = (total: number) => Math.ceil(total / namespaces.length);
  for (const namespace of namespaces) {
    const prefix = namespace.join(".");
    const { item } = await store.memories.save(namespace, { text: "The customer prefers weekly reports for account 0.", subject: "template" });
    await addFacts(targetOf(store), prefix, { key: item.id }, { from: share(from), to: share(to) });
  }
}

export async function measureHistory(options: HistoryOptions): Promise<HistoryPoint[]> {
  return withTempDir(`troupe-bench-scale-history-${options.backend}-`, async (directory) => {
    const name = "scale_history";
    const url = options.backend === "postgres" ? await options.database(name) : undefined;
    const dataDir = path.join(directory, "data");
    mkdirSync(dataDir, { recursive: true });
    // The server runs nothing here: an empty script.
    writeFileSync(path.join(directory, "none.json"), "[]");
    const env = { TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE, TROUPE_SCRIPT: path.join(directory, "none.json"), TROUPE_DATA_DIR: dataDir, ...(url ? { TROUPE_DATABASE_URL: url } : {}) };
    const points: HistoryPoint[] = [];
    const newest = Date.now() - 24 * 60 * 60 * 1000;
    let store = await openStore({ dataDir, ...(url ? { databaseUrl: url } : {}) });
    try {
      const { template, shown } = await makeTemplates(store, directory);
      let runs = 0;
      for (const size of options.sizes) {
        options.log(`  ${options.backend}: ${size.toLocaleString("en-US")} finished runs…`);
        const started = performance.now();
        const sqlite = store.kind === "sqlite" ? (store as SqliteStore).db : undefined;
        sqlite?.pragma("synchronous = OFF");
        await cloneFinishedRuns(targetOf(store), template, { from: runs, to: size }, { owner: OWNER, newest, checkpoints: { every: CHECKPOINTS_EVERY, allFrom: size - GC_BATCH } });
        await growFacts(store, runs / 10, size / 10);
        sqlite?.pragma("synchronous = FULL");
        sqlite?.pragma("wal_checkpoint(TRUNCATE)");
        // What autovacuum does after such an insert (Postgres), and the load's dirty pages written
        // out: read right after, a million runs' figures measured the catch-up (autovacuum and the
        // checkpointer on 15 GB), not the store. SQLite is left as troupe leaves it.
        if (url) {
          await sql(store, "VACUUM (ANALYZE)");
          await sql(store, "CHECKPOINT");
        }
        runs = size;
        const loadSeconds = (performance.now() - started) / 1000;
        const bytes = await store.retention.size();
        options.log(`    written in ${loadSeconds.toFixed(1)} s, ${(bytes / 1024 ** 3).toFixed(2)} GiB on disk; reading…`);
        await store.close();
        const ms = await readFigures(directory, env, shown, factQuery(7));
        ms["troupe runs show (process)"] = await runsShowCli(directory, env, shown[1] as string);
        store = await openStore({ dataDir, ...(url ? { databaseUrl: url } : {}) });
        // gc of the oldest 10,000 runs, timed as `troupe gc` runs it (the space given back at the end).
        const troupe = await Troupe.create({ provider: "offline", store, dataDir: store.directory, workspace: path.join(directory, "workspace") });
        const [cut] = await sql(store, `SELECT updated_at FROM runs ORDER BY updated_at LIMIT 1 OFFSET ${GC_BATCH}`);
        const gcStarted = performance.now();
        const report = await troupe.gc({ cutoff: Number(cut?.updated_at) });
        ms["gc of 10,000 runs"] = performance.now() - gcStarted;
        if (report.runs < GC_BATCH * 0.9) throw new Error(`scale/history: gc collected ${report.runs} runs, not about ${GC_BATCH}`);
        // Written again, so the next size starts from this one.
        await cloneFinishedRuns(targetOf(store), template, { from: size - report.runs, to: size }, { owner: OWNER, newest: newest - 365 * 24 * 60 * 60 * 1000 });
        points.push({ runs: size, facts: size / 10, loadSeconds, bytes, ms });
      }
    } finally {
      await store.close();
      if (url) await options.drop(name);
    }
    return points;
  });
}
