/**
 * What `troupe serve` does on a calendar, end to end on SQLite: the config file's `retention`
 * collected at its cron's tick, and the config's `schedules` (and one added over the API) fired
 * once per tick. The server is the one `troupe serve` starts (startServer, with the config file
 * read as the CLI reads it); only its clock is one the test moves by hand, so a daily or hourly
 * tick comes at once.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { createLogger } from "../src/server/app.js";
import { type RunningServer, startServer } from "../src/server/serve.js";
import { ManualClock } from "../src/testing/manual-clock.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel, type ScriptStep } from "../src/testing/scripted-chat-model.js";
import { runCli, tempDir } from "./helpers.js";
import { waitFor } from "./server-helpers.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const servers: RunningServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.shutdown("test over");
});

async function serveWith(config: Record<string, unknown>, steps: ScriptStep[], clock: ManualClock) {
  const directory = tempDir("troupe-calendar-");
  writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify(config));
  mkdirSync(path.join(directory, "workspace"));
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ models: modelSetOf(model), configDir: directory, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
  const server = await startServer({ troupe, config: { port: 0, host: "127.0.0.1", rateLimitPerMinute: 0, maxEventLoopDelayMs: 0 }, logger: createLogger("warn"), clock });
  servers.push(server);
  const api = async <T = Record<string, unknown>>(route: string, init: { method?: string; body?: unknown } = {}) => {
    const response = await fetch(`${server.url}/api/v1${route}`, {
      method: init.method ?? "GET",
      headers: init.body === undefined ? {} : { "content-type": "application/json" },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    return { status: response.status, data: ((await response.json()) as { data: T }).data };
  };
  return { directory, troupe, server, model, api };
}

const quick = (tag: string, times = 1): ScriptStep[] => [
  planStep([subtask("s1", "execute", `Do ${tag}`)], { contains: tag, times }),
  finalStep("s1", `${tag} done`, { contains: `Do ${tag}`, times }),
  reviewStep(0.9, {}, { contains: tag, times }),
  answerStep(`${tag} answered`, { contains: tag, times }),
];

describe("troupe serve on a calendar (SQLite)", () => {
  it("applies the config's retention at its cron's tick: old finished runs go, a kept status stays, running and waiting runs stay", async () => {
    const clock = new ManualClock();
    const { api, troupe } = await serveWith(
      { retention: { olderThan: "1d", keep: ["failed"], schedule: "0 3 * * *" } },
      [
        ...quick("first job"),
        ...quick("second job"),
        { role: "planner", error: "the planner broke", contains: "failing job" },
        planStep([subtask("s1", "execute", "Await approval")], { contains: "waiting job" }),
        planStep([subtask("s1", "execute", "Take a long time")], { contains: "long job" }),
        finalStep("s1", "late", { contains: "Take a long time", gate: "never" }),
      ],
      clock,
    );
    const submit = async (body: Record<string, unknown>) => (await api<{ task_id: string }>("/execute", { method: "POST", body })).data.task_id;
    const statusOf = async (id: string) => (await api<{ status: string }>(`/tasks/${id}`)).data.status;
    const until = (id: string, status: string) => waitFor(async () => ((await statusOf(id)) === status ? true : undefined), `${id} to be ${status}`);
    const first = await submit({ task: "the first job" });
    const second = await submit({ task: "the second job" });
    const failing = await submit({ task: "the failing job" });
    const waiting = await submit({ task: "the waiting job", approve_plan: true });
    const long = await submit({ task: "the long job" });
    await Promise.all([until(first, "completed"), until(second, "completed"), until(failing, "failed"), until(waiting, "interrupted"), until(long, "running")]);

    // Half a day on: the tick at 03:00 may have come, but nothing is a day old yet.
    clock.advance(DAY / 2);
    await sleep(300);
    expect(await statusOf(first)).toBe("completed");

    // Two days on: the next 03:00 tick collects what finished more than a day before it.
    clock.advance(2 * DAY);
    await waitFor(async () => ((await api(`/tasks/${first}`)).status === 404 ? true : undefined), "the retention tick to collect the old runs");
    expect((await api(`/tasks/${second}`)).status).toBe(404);
    expect(await statusOf(failing)).toBe("failed");
    expect(await statusOf(waiting)).toBe("interrupted");
    expect(await statusOf(long)).toBe("running");
    expect(await troupe.store.events.list(first, 0, 10)).toEqual([]);
    // What was kept still works: the long run can be cancelled.
    expect((await api(`/tasks/${long}/cancel`, { method: "POST" })).status).toBe(200);
    await until(long, "cancelled");
  });

  it("fires the config's schedules, and one added over the API, once per tick, each tick a run of its own", async () => {
    const start = Date.now();
    const clock = new ManualClock(start);
    const { api, troupe } = await serveWith({ schedules: [{ name: "hourly-report", cron: "0 * * * *", task: "write the hourly report" }] }, [...quick("hourly report", 2), ...quick("half-hour check", 1)], clock);
    const added = await api<{ name: string }>("/schedules", { method: "POST", body: { name: "half-past", cron: "30 * * * *", task: "run the half-hour check" } });
    expect(added.status).toBe(201);
    const runsOf = async (text: string) => (await api<{ items: Array<{ task_id: string; task: string; status: string }> }>("/tasks?limit=50")).data.items.filter((item) => item.task === text);
    const settle = async () => {
      // Time for the timer to look (it looks on every clock step) and the runs it starts to end.
      await sleep(500);
      await waitFor(async () => ((await api<{ items: Array<{ status: string }> }>("/tasks?limit=50")).data.items.every((item) => item.status === "completed") ? true : undefined), "the fired runs to end");
    };
    const nextHour = Math.ceil((start + 1) / HOUR) * HOUR;

    // Nothing before the first tick (the ticks from before the schedules existed never fire).
    await settle();
    expect(await runsOf("write the hourly report")).toEqual([]);
    // The hour strikes: one run; looked at again and again within that hour, still one.
    clock.set(nextHour + 5_000);
    await settle();
    for (const step of [60_000, 5 * 60_000, 10 * 60_000]) {
      clock.advance(step);
      await sleep(100);
    }
    await settle();
    expect(await runsOf("write the hourly report")).toHaveLength(1);
    // Half past (the schedule added over the API), then the next hour: one run each.
    clock.set(nextHour + 30 * 60_000 + 5_000);
    await settle();
    clock.set(nextHour + HOUR + 5_000);
    await settle();
    const reports = await runsOf("write the hourly report");
    expect(reports).toHaveLength(2);
    expect(new Set(reports.map((run) => run.task_id)).size).toBe(2);
    expect(reports.every((run) => run.status === "completed")).toBe(true);
    expect(await runsOf("run the half-hour check")).toHaveLength(1);
    // The schedule says which tick it fired last, and its run (a config schedule is no API key's: read from the store).
    const hourly = await troupe.schedules.get("hourly-report");
    expect(hourly.lastTick).toBe(nextHour + HOUR);
    expect(reports.map((run) => run.task_id)).toContain(hourly.lastRunId);
  });

  it("refuses a retention schedule that is not a cron expression before it starts (it would never collect)", async () => {
    const directory = tempDir("troupe-calendar-");
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ retention: { olderThan: "30d", schedule: "every night" } }));
    const result = await runCli(["serve", "--port", "0"], { cwd: directory, env: { TROUPE_DATA_DIR: path.join(directory, "data") } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/retention\.schedule/);
    expect(result.stderr).toMatch(/five fields/);
  });
});
