import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { ScheduleRunner } from "../src/runtime/schedules.js";
import type { RunRecord } from "../src/store/index.js";
import { tempDir } from "./helpers.js";
import { envelope, makeApp } from "./server-helpers.js";
import { freshDatabase } from "./postgres.js";
import { call, serveApi, stopAll, until } from "./scale-out-helpers.js";

afterEach(stopAll);

const MINUTE = 60_000;

describe("schedules", () => {
  it("fires each tick once however often it looks; a missed tick runs once (catchUp once) or not at all (skip); a bad cron is refused", async () => {
    const directory = tempDir();
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    try {
      await expect(troupe.schedules.add({ cron: "every minute", task: "x" }, { source: "cli" })).rejects.toMatchObject({ code: "invalid_schedule" });
      await expect(troupe.schedules.add({ cron: "* * * * * *", task: "x" }, { source: "cli" })).rejects.toMatchObject({ code: "invalid_schedule" });
      await expect(troupe.schedules.add({ cron: "0 9 * * *", timezone: "Mars/Olympus", task: "x" }, { source: "cli" })).rejects.toMatchObject({ code: "invalid_schedule" });
      const everyMinute = await troupe.schedules.add({ name: "minutely", cron: "* * * * *", task: "compute 1+1", threadId: "sched" }, { source: "cli" });
      await expect(troupe.schedules.add({ name: "minutely", cron: "* * * * *", task: "again" }, { source: "cli" })).rejects.toMatchObject({ code: "schedule_exists" });
      const hourlyOnce = await troupe.schedules.add({ name: "hourly-once", cron: "0 * * * *", task: "compute 2+2", catchUp: "once" }, { source: "cli" });
      const hourlySkip = await troupe.schedules.add({ name: "hourly-skip", cron: "0 * * * *", task: "compute 3+3" }, { source: "cli" });
      const fired: Array<{ name: string; tick: number; skipped?: boolean }> = [];
      const submitted: string[] = [];
      let count = 0;
      const runner = new ScheduleRunner({
        store: troupe.store,
        submit: async (schedule) => {
          submitted.push(schedule.name);
          count += 1;
          return { id: `run-${count}` } as RunRecord;
        },
        onFire: ({ schedule, tick, skipped }) => fired.push({ name: schedule.name, tick, ...(skipped ? { skipped } : {}) }),
      });
      const start = Math.ceil((everyMinute.createdAt + MINUTE) / MINUTE) * MINUTE;
      // Looked at four times within one minute: one run.
      for (const offset of [1_000, 10_000, 30_000, 59_000]) await runner.check(start + offset);
      expect(submitted).toEqual(["minutely"]);
      // Two processes looking at the same tick (two runners on one store): still one run.
      const other = new ScheduleRunner({ store: troupe.store, submit: async () => ({ id: "run-other" }) as RunRecord });
      await Promise.all([runner.check(start + MINUTE + 500), other.check(start + MINUTE + 500)]);
      expect(submitted.filter((name) => name === "minutely")).toHaveLength(2);
      expect((await troupe.schedules.get("minutely")).lastRunId).toMatch(/^run-/);
      // Nothing ran for hours, and it is half past: the hourly ticks were missed — hourly-once runs its
      // latest once, hourly-skip skips it —, while the minutely schedule's latest tick is on time.
      const later = Math.ceil((start + 3 * 60 * MINUTE) / (60 * MINUTE)) * 60 * MINUTE + 30 * MINUTE;
      submitted.length = 0;
      await runner.check(later);
      expect(submitted.sort()).toEqual(["hourly-once", "minutely"]);
      expect(fired.filter((item) => item.skipped).map((item) => item.name)).toEqual(["hourly-skip"]);
      await runner.check(later + 1_000);
      expect(submitted.sort()).toEqual(["hourly-once", "minutely"]);
      expect((await troupe.schedules.list()).map((item) => item.name)).toEqual(["hourly-once", "hourly-skip", "minutely"]);
      await troupe.schedules.remove(hourlyOnce.id);
      await troupe.schedules.remove(hourlySkip.name);
      expect((await troupe.schedules.list()).map((item) => item.name)).toEqual(["minutely"]);
    } finally {
      await troupe.shutdown();
    }
  });

  it("/api/v1/schedules: the caller's schedules only", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:a-key,bob:b-key" } });
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    const made = await app.app.inject({ method: "POST", url: "/api/v1/schedules", headers: as("a-key"), payload: { name: "daily", cron: "0 9 * * 1-5", timezone: "Europe/Paris", task: "compute 1+1", thread_id: "mornings" } });
    expect(made.statusCode).toBe(201);
    expect(envelope<{ next_tick: string; source: string }>(made).data).toMatchObject({ source: "api", next_tick: expect.any(String) });
    const bad = await app.app.inject({ method: "POST", url: "/api/v1/schedules", headers: as("a-key"), payload: { cron: "61 * * * *", task: "x" } });
    expect([bad.statusCode, envelope(bad).code]).toEqual([400, "invalid_schedule"]);
    expect(envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/schedules", headers: as("b-key") })).data.total).toBe(0);
    expect((await app.app.inject({ method: "DELETE", url: "/api/v1/schedules/daily", headers: as("b-key") })).statusCode).toBe(404);
    expect((await app.app.inject({ method: "DELETE", url: "/api/v1/schedules/daily", headers: as("a-key") })).statusCode).toBe(200);
  });

  it("fires exactly once per tick across two troupe serve processes on Postgres (pg-boss's scheduler)", async () => {
    const directory = tempDir("troupe-sched-");
    // Info logs: each process says which tick it fired and the task it made ("schedule fired").
    const env = { TROUPE_DATABASE_URL: await freshDatabase("schedules"), TROUPE_PROVIDER: "offline", TROUPE_WORKSPACE: path.join(directory, "ws"), TROUPE_SCHEDULE_CHECK_SECONDS: "1", TROUPE_LOG_LEVEL: "info" };
    const [first, second] = await Promise.all([serveApi(directory, env, []), serveApi(directory, env, [])]);
    const made = await call<{ id: string }>(`${first.url}/api/v1/schedules`, { method: "POST", body: { name: "tick", cron: "* * * * *", task: "compute 6*7" } });
    expect(made.status).toBe(201);
    const tasks = async (): Promise<Array<{ task_id: string; status: string; created_at: string }>> =>
      (await call<{ items: Array<{ task_id: string; status: string; created_at: string }> }>(`${second.url}/api/v1/tasks?limit=100`)).body.data.items;
    const fired = (): Array<{ tick: string; taskId: string }> =>
      [first, second].flatMap((proc) =>
        proc
          .stdout()
          .split("\n")
          .filter((line) => line.includes('"schedule fired"'))
          .map((line) => JSON.parse(line) as { tick: string; taskId: string }),
      );
    const firstRun = await until(async () => ((await tasks()).length > 0 ? (await tasks())[0] : undefined), "the first tick's run");
    // Both processes' passes over the same tick are over once a later tick has fired (by either): still one run per tick.
    await until(() => (new Set(fired().map((entry) => entry.tick)).size >= 2 ? true : undefined), "a second tick");
    const told = fired();
    const all = await tasks();
    const ids = new Set(all.map((task) => task.task_id));
    // Every fire told made a run, and every run was made by a fire told (its log line may follow the run by a moment).
    expect(told.every((entry) => ids.has(entry.taskId))).toBe(true);
    await until(() => (all.every((task) => fired().some((entry) => entry.taskId === task.task_id)) ? true : undefined), "each run's fire in the logs");
    const ticks = fired().map((entry) => entry.tick);
    expect(ticks.length).toBe(new Set(ticks).size);
    expect(all.some((task) => task.task_id === firstRun.task_id)).toBe(true);
    const schedule = (await call<{ last_task_id: string | null }>(`${first.url}/api/v1/schedules/tick`)).body.data;
    expect(all.map((task) => task.task_id)).toContain(schedule.last_task_id);
    await until(async () => ((await call<{ status: string }>(`${first.url}/api/v1/tasks/${firstRun.task_id}`)).body.data.status === "completed" ? true : undefined), "the scheduled run to complete");
  });
});
