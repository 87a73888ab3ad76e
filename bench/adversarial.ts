import { Agent } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { metric, metrics, send, startServer } from "./server.js";
import { percentile, withTempDir } from "./support.js";

/** The bar: the server's event loop stays responsive while adversarial tasks run. */
export const LAG_P99_TARGET_MS = 100;

export interface AdversarialBenchOptions {
  /** Characters of each task (the API's limit is 5,000). */
  chars: number;
  /** How often /health is polled, in ms. */
  pollMs: number;
}

export interface AdversarialBenchReport {
  tasks: Array<{ kind: string; chars: number; status: string }>;
  /** The server's own event-loop delay over the window (prom-client's monitorEventLoopDelay), ms. */
  lagP99Ms: number;
  lagMaxMs: number;
  /** /health polls answered 200, of all sent while the tasks ran, and their round trips (ms). */
  health: { polls: number; ok: number; p99Ms: number; maxMs: number };
  durationMs: number;
  target: { maxLagP99Ms: number; met: boolean };
}

/** Text that costs a naive byte-pair merge the square of its length: one unbroken piece each. */
function adversarialTasks(chars: number): Array<{ kind: string; task: string }> {
  let seed = 11;
  const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
  const letters = Array.from({ length: chars }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(next() / 65_536) % 26]).join("");
  return [
    { kind: "one letter repeated", task: "a".repeat(chars) },
    { kind: "random letters, no space", task: letters },
    { kind: "punctuation run", task: "!".repeat(chars) },
  ];
}

/**
 * Benchmark 9: three 5,000-character adversarial tasks submitted at once to `troupe serve` (the
 * offline model, which reports no usage, so troupe counts every prompt's tokens itself), while
 * /health is polled; the server's event-loop delay p99 comes from its /metrics, reset by a scrape
 * just before the tasks go in.
 */
export async function measureAdversarial(options: AdversarialBenchOptions): Promise<AdversarialBenchReport> {
  return withTempDir("troupe-bench-adversarial-", async (directory) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const server = await startServer(directory, { TROUPE_DATA_DIR: path.join(directory, "data"), TROUPE_PROVIDER: "offline" });
    try {
      // One ordinary task first, so loading the tokenizer's tables (once per process) is not what is measured.
      const warm = await send(agent, server.port, "POST", "/api/v1/execute", { task: "compute 17% of 2,340" });
      const warmId = (warm.json() as { data: { task_id: string } }).data.task_id;
      for (let wait = 0; wait < 600; wait += 1) {
        const view = (await send(agent, server.port, "GET", `/api/v1/tasks/${warmId}`)).json() as { data: { status: string } };
        if (view.data.status === "completed" || view.data.status === "failed") break;
        await sleep(50);
      }
      // A first scrape resets the delay histogram: what follows covers the tasks only.
      await metric(agent, server.port, "nodejs_eventloop_lag_p99_seconds");
      const started = performance.now();
      const kinds = adversarialTasks(options.chars);
      const ids = await Promise.all(
        kinds.map(async ({ task }) => {
          const response = await send(agent, server.port, "POST", "/api/v1/execute", { task });
          return (response.json() as { data: { task_id: string } }).data.task_id;
        }),
      );
      const rounds: number[] = [];
      let ok = 0;
      let statuses: string[] = [];
      const deadline = Date.now() + 300_000;
      for (;;) {
        const before = performance.now();
        const health = await send(agent, server.port, "GET", "/health");
        rounds.push(performance.now() - before);
        if (health.status === 200) ok += 1;
        statuses = await Promise.all(ids.map(async (id) => ((await send(agent, server.port, "GET", `/api/v1/tasks/${id}`)).json() as { data: { status: string } }).data.status));
        if (statuses.every((status) => ["completed", "failed", "cancelled", "interrupted"].includes(status)) || Date.now() > deadline) break;
        await sleep(options.pollMs);
      }
      const durationMs = performance.now() - started;
      const [lagP99, lagMax] = await metrics(agent, server.port, ["nodejs_eventloop_lag_p99_seconds", "nodejs_eventloop_lag_max_seconds"]);
      const lagP99Ms = (lagP99 as number) * 1000;
      const lagMaxMs = (lagMax as number) * 1000;
      const sorted = [...rounds].sort((a, b) => a - b);
      return {
        tasks: kinds.map((kind, index) => ({ kind: kind.kind, chars: kind.task.length, status: statuses[index] ?? "unknown" })),
        lagP99Ms,
        lagMaxMs,
        health: { polls: rounds.length, ok, p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? Number.NaN },
        durationMs,
        target: { maxLagP99Ms: LAG_P99_TARGET_MS, met: lagP99Ms < LAG_P99_TARGET_MS },
      };
    } finally {
      await server.stop();
      agent.destroy();
    }
  });
}
