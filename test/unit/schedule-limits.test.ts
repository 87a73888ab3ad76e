import { describe, expect, it } from "vitest";
import { DEFAULT_SCHEDULE_LIMITS, firesPerHour } from "../../src/core/schedule.js";
import { ScheduleRunner } from "../../src/runtime/schedules.js";
import type { RunRecord } from "../../src/store/index.js";
import { envelope, makeApp } from "../server-helpers.js";

const KEYS = { apiKeys: "alice:a-key,bob:b-key" };
const ALICE = { authorization: "Bearer a-key" };
const BOB = { authorization: "Bearer b-key" };
const MINUTE = 60_000;

type App = Awaited<ReturnType<typeof makeApp>>;
const schedule = (app: App, headers: Record<string, string>, payload: Record<string, unknown>) => app.app.inject({ method: "POST", url: "/api/v1/schedules", headers, payload });

describe("what one API key may schedule", () => {
  it("measures a cron by its busiest hour", () => {
    expect(firesPerHour("* * * * *")).toBe(60);
    expect(firesPerHour("*/5 * * * *")).toBe(12);
    expect(firesPerHour("0,30 9-17 * * 1-5")).toBe(2);
    expect(firesPerHour("0 9 * * *", "Europe/Paris")).toBe(1);
  });

  it("takes one every-minute schedule of the 120 one key sent on main, refusing the rest with 403 schedules_too_frequent; another key is not held back", async () => {
    const app = await makeApp({ config: KEYS });
    const answers = [];
    for (let index = 0; index < 120; index += 1) answers.push(await schedule(app, ALICE, { name: `flood-${index}`, cron: "* * * * *", task: "compute 1+1" }));
    expect(answers.filter((answer) => answer.statusCode === 201)).toHaveLength(1);
    const refused = answers.filter((answer) => answer.statusCode !== 201);
    expect(new Set(refused.map((answer) => `${answer.statusCode} ${envelope(answer).code}`))).toEqual(new Set(["403 schedules_too_frequent"]));
    expect(envelope(refused[0] as (typeof refused)[number]).message).toMatch(/fires up to 60 times an hour; with this key's other schedules \(60 an hour\) that is more than the 60 runs an hour/);
    expect((await app.troupe.schedules.list({ owner: "alice" })).length).toBe(1);
    // Bob's hour is his own.
    expect((await schedule(app, BOB, { name: "bobs", cron: "* * * * *", task: "compute 1+1" })).statusCode).toBe(201);
  });

  it("holds a key to 25 schedules by default (403 too_many_schedules), counted in the insert's transaction: 40 at once make 25", async () => {
    expect(DEFAULT_SCHEDULE_LIMITS).toEqual({ maxPerKey: 25, maxFiresPerHourPerKey: 60 });
    const app = await makeApp({ config: KEYS });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, index) => schedule(app, ALICE, { name: `daily-${index}`, cron: "0 9 * * *", task: "compute 1+1" })));
    expect(answers.filter((answer) => answer.statusCode === 201)).toHaveLength(25);
    const refused = answers.filter((answer) => answer.statusCode !== 201);
    expect(new Set(refused.map((answer) => `${answer.statusCode} ${envelope(answer).code}`))).toEqual(new Set(["403 too_many_schedules"]));
    expect(envelope(refused[0] as (typeof refused)[number]).data).toEqual({ schedules: 25, limit: 25 });
    expect((await app.troupe.schedules.list({ owner: "alice" })).length).toBe(25);
    // Removing one makes room for one.
    expect((await app.app.inject({ method: "DELETE", url: "/api/v1/schedules/daily-0", headers: ALICE })).statusCode).toBe(200);
    expect((await schedule(app, ALICE, { name: "again", cron: "0 9 * * *", task: "compute 1+1" })).statusCode).toBe(201);
    expect((await schedule(app, ALICE, { name: "one-more", cron: "0 9 * * *", task: "compute 1+1" })).statusCode).toBe(403);
  });

  it("reads the limits from the config file's server.schedules", async () => {
    const app = await makeApp({ config: KEYS, troupe: { config: { server: { schedules: { maxPerKey: 2, maxFiresPerHourPerKey: 240 } } } } });
    expect((await schedule(app, ALICE, { name: "a", cron: "* * * * *", task: "compute 1+1" })).statusCode).toBe(201);
    expect((await schedule(app, ALICE, { name: "b", cron: "* * * * *", task: "compute 1+1" })).statusCode).toBe(201);
    const third = await schedule(app, ALICE, { name: "c", cron: "0 9 * * *", task: "compute 1+1" });
    expect([third.statusCode, envelope(third).code]).toEqual([403, "too_many_schedules"]);
    const none = await makeApp({ config: KEYS, troupe: { config: { server: { schedules: { maxPerKey: 0 } } } } });
    expect((await schedule(none, ALICE, { cron: "0 9 * * *", task: "compute 1+1" })).statusCode).toBe(403);
  });

  it("keeps schedules made before a limit was lowered firing; only new ones are refused", async () => {
    const app = await makeApp({ config: KEYS, troupe: { config: { server: { schedules: { maxPerKey: 1 } } } } });
    // Three of alice's schedules from before (an older troupe, or a higher limit).
    for (const name of ["one", "two", "three"]) await app.troupe.schedules.add({ name, cron: "* * * * *", task: "compute 1+1" }, { owner: "alice", source: "api" });
    const refused = await schedule(app, ALICE, { name: "four", cron: "0 9 * * *", task: "compute 1+1" });
    expect([refused.statusCode, envelope(refused).code]).toEqual([403, "too_many_schedules"]);
    const submitted: string[] = [];
    const runner = new ScheduleRunner({
      store: app.troupe.store,
      submit: async (due) => {
        submitted.push(due.name);
        return { id: `run-${submitted.length}` } as RunRecord;
      },
    });
    const created = (await app.troupe.schedules.get("one", { owner: "alice" })).createdAt;
    await runner.check(Math.ceil((created + MINUTE) / MINUTE) * MINUTE + 1_000);
    // Kept under alice's names (a key's schedule names are its own).
    expect(submitted.sort()).toEqual(["alice/one", "alice/three", "alice/two"]);
  });

  it("does not hold the operator's own schedules (CLI, config file) to a key's limits", async () => {
    const app = await makeApp({ config: KEYS, troupe: { config: { server: { schedules: { maxPerKey: 0, maxFiresPerHourPerKey: 0 } } } } });
    await app.troupe.schedules.add({ name: "ops", cron: "* * * * *", task: "compute 1+1" }, { source: "cli" });
    await app.troupe.schedules.syncConfig([{ name: "nightly", cron: "0 2 * * *", task: "compute 2+2" }]);
    expect((await app.troupe.schedules.list()).map((item) => item.name)).toEqual(["nightly", "ops"]);
  });
});
