/**
 * Operating troupe over time: (1) gc throughput — runs deleted per second on a database of
 * 10,000 finished runs (each with its events, a stash value and its thread's checkpoints; a tenth
 * more still running, which gc must leave), and the data on disk before and after; (2) webhook
 * delivery latency — from a run's end (its record's finish time) to the receiver getting the
 * signed POST, with the server's sender woken by the run's end (SQLite) or a pg-boss job (Postgres).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { pino } from "pino";
import { TroupeConfig } from "../src/config/config-file.js";
import { TRUSTED } from "../src/core/provenance.js";
import { Troupe } from "../src/runtime/engine.js";
import { createApp } from "../src/server/app.js";
import { Background } from "../src/server/background.js";
import { openStore, type SqliteStore, type Store } from "../src/store/index.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { type Summary, summarize, withTempDir } from "./support.js";

export interface GcFigures {
  backend: "sqlite" | "postgres";
  runs: number;
  running: number;
  collected: number;
  seconds: number;
  runsPerSecond: number;
  bytesBefore: number;
  bytesAfter: number;
  /** Runs still running after gc (all of them must be). */
  runningLeft: number;
}

export interface WebhookFigures {
  backend: "sqlite" | "postgres";
  deliveries: number;
  latencyMs: Summary;
}

export interface OperationsBenchReport {
  gc: GcFigures[];
  webhooks: WebhookFigures[];
  target: { gcRunsPerSecond: number; webhookP95Ms: number; runningKept: boolean; spaceBack: boolean; met: boolean };
}

const METRICS = { llmCalls: 5, toolCalls: 2, promptTokens: 3_000, completionTokens: 400, costUsd: 0, reflectionCount: 0, nodeVisits: 8, durationMs: 300 };

/** Fills a store with `count` finished runs, as a run leaves them (record, events, a stash value, its thread's checkpoints), and `running` more still running. */
async function populate(store: Store, count: number, running: number): Promise<void> {
  const batch = 200;
  for (let start = 0; start < count + running; start += batch) {
    const ids = Array.from({ length: Math.min(batch, count + running - start) }, (_, offset) => start + offset);
    await Promise.all(
      ids.map(async (index) => {
        const id = `run-bench-${index}`;
        const threadId = `thread-bench-${index}`;
        const live = index >= count;
        await store.runs.create({ id, threadId, task: `task ${index}`, status: "running", request: { task: `task ${index}` }, pid: process.pid, host: "bench" });
        for (const [seq, type] of ["run-start", "plan-ready", "subtask-start", "subtask-end", "run-end"].entries()) {
          await store.events.append(id, { type: "answer", text: `${type} ${seq} ${"·".repeat(120)}` });
        }
        await store.stash.put({ runId: id, subtaskId: "s1" }, { result: "r".repeat(1_024), index }, TRUSTED);
        let config = { configurable: { thread_id: threadId, checkpoint_ns: "" } } as Parameters<Store["checkpointer"]["put"]>[0];
        for (let step = 0; step < 3; step += 1) {
          const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { runId: id, task: `task ${index}`, results: { s1: { ref: `stash:${id}/s1`, summary: "x".repeat(200) } }, step }, channel_versions: { runId: 1, task: 1, results: step + 1, step: step + 1 } };
          config = await store.checkpointer.put(config, checkpoint, { source: "loop", step, parents: {} }, step === 0 ? { runId: 1, task: 1, results: 1, step: 1 } : { results: step + 1, step: step + 1 });
        }
        if (!live) await store.runs.update(id, { status: "completed", stopReason: "completed", answer: `answer ${index}`, metrics: METRICS, pid: null, finishedAt: Date.now() });
      }),
    );
  }
  await store.events.flush();
}

async function measureGc(backend: "sqlite" | "postgres", open: () => Promise<Store>, runs: number, log: (line: string) => void): Promise<GcFigures> {
  const running = Math.round(runs / 10);
  const store = await open();
  log(`  ${backend}: writing ${runs} finished runs and ${running} running…`);
  // Setting the database up is not what is measured: SQLite's commits are not synced while it is written.
  const sqlite = store.kind === "sqlite" ? (store as SqliteStore).db : undefined;
  sqlite?.pragma("synchronous = OFF");
  await populate(store, runs, running);
  sqlite?.pragma("synchronous = FULL");
  // The space a database takes once its write-ahead log is folded in, as gc leaves it.
  if (store.kind === "sqlite") await store.retention.reclaim({ runs: 0 });
  const troupe = await Troupe.create({ provider: "offline", store, dataDir: store.directory, workspace: path.join(store.directory, "ws") });
  try {
    const before = await store.retention.size();
    const started = performance.now();
    const report = await troupe.gc({ cutoff: Date.now() + 1 });
    const seconds = (performance.now() - started) / 1000;
    const runningLeft = await store.runs.count({ status: "running" });
    return { backend, runs, running, collected: report.runs, seconds, runsPerSecond: report.runs / seconds, bytesBefore: before, bytesAfter: report.bytesAfter, runningLeft };
  } finally {
    await troupe.shutdown();
  }
}

async function measureWebhooks(backend: "sqlite" | "postgres", databaseUrl: string | undefined, deliveries: number, log: (line: string) => void): Promise<WebhookFigures> {
  const arrivals = new Map<string, number>();
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      const runId = (JSON.parse(body) as { run: { id: string } }).run.id;
      arrivals.set(runId, Date.now());
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  process.env.TROUPE_BENCH_WEBHOOK_SECRET = "bench-secret";
  return withTempDir("troupe-bench-webhooks-", async (directory) => {
    const steps = Array.from({ length: deliveries }, () => [planStep([subtask("s1", "execute", "One")]), finalStep("s1", "one"), reviewStep(0.9), answerStep("done")]).flat();
    const troupe = await Troupe.create({
      models: modelSetOf(new ScriptedChatModel({ steps })),
      dataDir: path.join(directory, "data"),
      workspace: path.join(directory, "ws"),
      ...(databaseUrl ? { databaseUrl } : {}),
      config: TroupeConfig.parse({ webhooks: { secretEnv: "TROUPE_BENCH_WEBHOOK_SECRET", allowAddresses: ["127.0.0.1"], default: { url, events: ["completed"] } } }),
    });
    const logger = pino({ level: "silent" });
    const app = await createApp({ troupe, config: { rateLimitPerMinute: 0, maxEventLoopDelayMs: 0, logLevel: "silent" }, logger });
    await app.tasks.start();
    const background = new Background({ troupe, hub: app.hub, logger, tasks: app.tasks, serve: false });
    await background.start();
    try {
      log(`  ${backend}: ${deliveries} runs, each delivered as it ends…`);
      const ids: string[] = [];
      for (let index = 0; index < deliveries; index += 1) {
        // One at a time: the latency of a delivery, not of a queue of them.
        const { record } = await app.tasks.submit({ id: "bench" }, { task: `task ${index}` }, undefined);
        ids.push(record.id);
        const deadline = Date.now() + 30_000;
        while (!arrivals.has(record.id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const records = await troupe.store.runs.getMany(ids);
      const latencies = records.flatMap((record) => (arrivals.has(record.id) && record.finishedAt !== null ? [(arrivals.get(record.id) as number) - record.finishedAt] : []));
      return { backend, deliveries: latencies.length, latencyMs: summarize(latencies) };
    } finally {
      await background.stop();
      await app.tasks.shutdown(0);
      await app.app.close();
      await troupe.shutdown();
      server.close();
    }
  });
}

export async function measureOperations(options: { runs: number; deliveries: number; postgres?: () => Promise<string>; log: (line: string) => void }): Promise<OperationsBenchReport> {
  const gc: GcFigures[] = [];
  const webhooks: WebhookFigures[] = [];
  options.log(" gc throughput…");
  gc.push(await withTempDir("troupe-bench-gc-", (directory) => measureGc("sqlite", () => openStore({ dataDir: directory }), options.runs, options.log)));
  if (options.postgres) {
    const databaseUrl = await options.postgres();
    gc.push(await withTempDir("troupe-bench-gc-pg-", (directory) => measureGc("postgres", () => openStore({ dataDir: directory, databaseUrl }), options.runs, options.log)));
  }
  options.log(" webhook delivery latency…");
  webhooks.push(await measureWebhooks("sqlite", undefined, options.deliveries, options.log));
  if (options.postgres) webhooks.push(await measureWebhooks("postgres", await options.postgres(), options.deliveries, options.log));
  const sqliteGc = gc[0] as GcFigures;
  const p95 = Math.max(...webhooks.map((figures) => figures.latencyMs.p95));
  const target = {
    gcRunsPerSecond: 1_000,
    webhookP95Ms: 1_000,
    runningKept: gc.every((figures) => figures.runningLeft === figures.running),
    spaceBack: sqliteGc.bytesAfter < sqliteGc.bytesBefore / 2,
    met: false,
  };
  target.met = gc.every((figures) => figures.runsPerSecond >= target.gcRunsPerSecond) && p95 <= target.webhookP95Ms && target.runningKept && target.spaceBack;
  return { gc, webhooks, target };
}

const megabytes = (bytes: number): string => `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
const figure = (value: number): string => (value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(1));

/** The section of the benchmark report. */
export function operationsSection(report: OperationsBenchReport): string {
  const lines = [
    "19. Operating over time: gc of a database of finished runs (each with five events, a 1 KB stash value, three checkpoints of its thread), a",
    "    tenth as many more still running, which gc must leave; then webhook deliveries, one run at a time, from its end to the receiver (127.0.0.1).",
    "",
  ];
  for (const gc of report.gc) {
    lines.push(
      `    gc ${gc.backend.padEnd(8)} ${gc.collected.toLocaleString("en-US")} of ${gc.runs.toLocaleString("en-US")} runs in ${gc.seconds.toFixed(2)} s: ${figure(gc.runsPerSecond)} runs/s; data ${megabytes(gc.bytesBefore)} → ${megabytes(gc.bytesAfter)}; running left ${gc.runningLeft}/${gc.running}`,
    );
  }
  for (const webhook of report.webhooks) {
    lines.push(`    webhook ${webhook.backend.padEnd(8)} ${webhook.deliveries} deliveries: ${figure(webhook.latencyMs.median)} ms median, ${figure(webhook.latencyMs.p95)} ms p95, ${figure(webhook.latencyMs.max)} ms max after the run's end`);
  }
  const { target } = report;
  lines.push(
    `    target: gc ≥ ${target.gcRunsPerSecond} runs/s, running runs kept (${target.runningKept ? "yes" : "no"}), SQLite's file at most half its size after (${target.spaceBack ? "yes" : "no"}), webhook p95 ≤ ${target.webhookP95Ms} ms → ${target.met ? "MET" : "NOT MET"}`,
  );
  return lines.join("\n");
}
