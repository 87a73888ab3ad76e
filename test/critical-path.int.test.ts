import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../src/core/events.js";
import type { PlannedSubtask } from "../src/core/plan.js";
import type { RunResult } from "../src/core/run.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { CLI, cleanEnv, eventsOf, readScriptLog, runCli, runScripted, tempDir, writeScript } from "./helpers.js";
import { TEST_TIMEOUT_MS, waitFor } from "./wait.js";

/** When each subtask started and ended, by its events. */
function timeline(events: StoredEvent[]): Map<string, { start: number; end: number }> {
  const spans = new Map<string, { start: number; end: number }>();
  for (const event of eventsOf(events, "subtask-start")) spans.set(event.subtaskId, { start: event.at, end: Number.NaN });
  for (const event of eventsOf(events, "subtask-end")) {
    const span = spans.get(event.subtaskId);
    if (span) span.end = event.at;
  }
  return spans;
}

/**
 * A plan whose every subtask is one scripted model call of `latency` ms that answers `result of <id>`;
 * a subtask in `after` replies only once the named one's call has ended (an order held, not timed).
 */
function scriptFor(plan: PlannedSubtask[], latency: Record<string, number>, after: Record<string, string> = {}): ScriptStep[] {
  const waits = (id: string) => (after[id] ? { after: { role: "research", subtask: after[id] } } : {});
  return [planStep(plan), ...plan.map((item) => finalStep(item.id, `result of ${item.id}`, { delayMs: latency[item.id] ?? 0, ...waits(item.id) })), reviewStep(0.9), answerStep("done")];
}

function ancestorsOf(plan: PlannedSubtask[]): Map<string, Set<string>> {
  const byId = new Map(plan.map((item) => [item.id, item]));
  const memo = new Map<string, Set<string>>();
  const visit = (id: string): Set<string> => {
    const known = memo.get(id);
    if (known) return known;
    const found = new Set<string>();
    for (const dependency of byId.get(id)?.dependsOn ?? []) {
      found.add(dependency);
      for (const above of visit(dependency)) found.add(above);
    }
    memo.set(id, found);
    return found;
  };
  for (const item of plan) visit(item.id);
  return memo;
}

/**
 * The checks every uneven DAG must pass: each subtask starts only after its dependencies ended,
 * and never waits for unrelated work — wherever a subtask was ready (its last dependency had
 * ended, by the recorded times, not the planned latencies, so a loaded machine that stretches a
 * step cannot flip the check) at least `margin` ms before an unrelated one ended, it started
 * before that one ended. Under waves it would have waited for it.
 */
function expectDependencyDriven(plan: PlannedSubtask[], events: StoredEvent[], margin = 150): number {
  const spans = timeline(events);
  const ancestors = ancestorsOf(plan);
  const firstStart = Math.min(...[...spans.values()].map((span) => span.start));
  const readyAt = (item: PlannedSubtask): number => Math.max(firstStart, ...item.dependsOn.map((dependency) => spans.get(dependency)?.end ?? Number.POSITIVE_INFINITY));
  let checked = 0;
  for (const item of plan) {
    const span = spans.get(item.id);
    expect(span, item.id).toBeDefined();
    for (const dependency of item.dependsOn) expect(span?.start, `${item.id} starts after ${dependency} ends`).toBeGreaterThanOrEqual(spans.get(dependency)?.end ?? Number.POSITIVE_INFINITY);
    for (const other of plan) {
      if (other.id === item.id || ancestors.get(item.id)?.has(other.id) || ancestors.get(other.id)?.has(item.id)) continue;
      if (readyAt(item) + margin <= (spans.get(other.id)?.end ?? 0)) {
        expect(span?.start, `${item.id} starts before unrelated ${other.id} ends`).toBeLessThan(spans.get(other.id)?.end ?? 0);
        checked += 1;
      }
    }
  }
  return checked;
}

describe("a subtask starts the moment its inputs exist", () => {
  it("runs a chain of four short subtasks beside a long one without waiting for it", async () => {
    const plan = [
      subtask("s1", "research", "Step one"),
      subtask("s2", "research", "Step two", { dependsOn: ["s1"] }),
      subtask("s3", "research", "Step three", { dependsOn: ["s2"] }),
      subtask("s4", "research", "Step four", { dependsOn: ["s3"] }),
      subtask("s5", "research", "The long one"),
    ];
    // The long one ends only after the chain's last step has: were the chain to wait for it (waves), the run would never end.
    const latency = { s1: 100, s2: 100, s3: 100, s4: 100, s5: 0 };
    const { model, result, events } = await runScripted(scriptFor(plan, latency, { s5: "s4" }), { task: "chain beside a long task" });
    model.assertDone();
    expect(result.status).toBe("completed");
    expect(expectDependencyDriven(plan, events)).toBeGreaterThanOrEqual(3);
    // The whole chain ran while the long subtask did: s5's call started before s4's, and ended only after it (its events may land in the same millisecond).
    const [chainEnd, long] = [model.callsFor("research", "s4")[0], model.callsFor("research", "s5")[0]];
    expect(long?.startedAt).toBeLessThanOrEqual(chainEnd?.startedAt ?? 0);
    expect(long?.endedAt).toBeGreaterThanOrEqual(chainEnd?.endedAt ?? Number.POSITIVE_INFINITY);
    // The planner's node ran the whole plan as it came (no plan approval), not one superstep per wave.
    expect(result.trace.nodes.slice(0, 2)).toEqual(["intake", "planner"]);
    expect(result.trace.nodes).not.toContain("execute");
  });

  it("runs the short branch of a skewed diamond, and what depends only on it, while the long branch runs", async () => {
    const plan = [
      subtask("s1", "research", "Start"),
      subtask("s2", "research", "Short branch", { dependsOn: ["s1"] }),
      subtask("s3", "research", "Long branch", { dependsOn: ["s1"] }),
      subtask("s4", "research", "Join both", { dependsOn: ["s2", "s3"] }),
      subtask("s5", "research", "After the short branch", { dependsOn: ["s2"] }),
    ];
    // The long branch ends only after what depends on the short one has: under waves it would never end.
    const latency = { s1: 50, s2: 50, s3: 0, s4: 50, s5: 300 };
    const { model, result, events } = await runScripted(scriptFor(plan, latency, { s3: "s5" }), { task: "skewed diamond" });
    expect(result.status).toBe("completed");
    expect(expectDependencyDriven(plan, events)).toBeGreaterThanOrEqual(2);
    // s5 ran while the long branch did: its call started before s3's ended, and ended first.
    const [long, short] = [model.callsFor("research", "s3")[0], model.callsFor("research", "s5")[0]];
    expect(short?.startedAt).toBeLessThanOrEqual(long?.endedAt ?? 0);
    expect(short?.endedAt).toBeLessThanOrEqual(long?.endedAt ?? 0);
  });

  it("holds for random DAGs of 20 subtasks with random latencies", async () => {
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    let checked = 0;
    for (let round = 0; round < 3; round += 1) {
      const plan: PlannedSubtask[] = [];
      const latency: Record<string, number> = {};
      for (let index = 1; index <= 20; index += 1) {
        const candidates = plan.map((item) => item.id);
        const dependsOn = candidates.filter(() => random() < 0.15).slice(0, 3);
        plan.push(subtask(`s${index}`, "research", `Random step ${index}`, { dependsOn }));
        latency[`s${index}`] = Math.round(20 + random() * 400);
      }
      const { model, result, events } = await runScripted(scriptFor(plan, latency), { task: `random DAG ${round}`, concurrency: 20 });
      model.assertDone();
      expect(result.status).toBe("completed");
      checked += expectDependencyDriven(plan, events);
    }
    // The latencies leave many pairs where waves would have made a subtask wait for unrelated work.
    expect(checked).toBeGreaterThan(20);
  });

  it("keeps the concurrency limit: never more subtasks at work than it allows", async () => {
    const plan = Array.from({ length: 6 }, (_, index) => subtask(`s${index + 1}`, "research", `Part ${index + 1}`));
    const latency = Object.fromEntries(plan.map((item) => [item.id, 150]));
    const { result, events } = await runScripted(scriptFor(plan, latency), { task: "six parts, two at a time", concurrency: 2 });
    expect(result.status).toBe("completed");
    const spans = [...timeline(events).values()];
    const busiest = Math.max(...spans.map((span) => spans.filter((other) => other.start <= span.start && other.end > span.start).length));
    expect(busiest).toBe(2);
  });
});

describe("a subtask waiting for a person", () => {
  it("does not hold up the other branch: the run pauses only when nothing else can go on, then resumes", async () => {
    const directory = tempDir();
    const model = new ScriptedChatModel({
      steps: [
        planStep([
          subtask("s1", "execute", "Remove old.txt"),
          subtask("s2", "research", "Slow lookup"),
          subtask("s3", "research", "Use the lookup", { dependsOn: ["s2"] }),
        ]),
        toolStep("s1", "file_delete", { path: "old.txt" }),
        finalStep("s2", "looked up", { delayMs: 300 }),
        finalStep("s3", "used it"),
        finalStep("s1", "removed", { contains: "deleted file old.txt" }),
        reviewStep(0.9),
        answerStep("all done"),
      ],
    });
    const troupe = await Troupe.create({
      models: modelSetOf(model),
      dataDir: path.join(directory, "data"),
      workspace: path.join(directory, "workspace"),
      toolsConfig: { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } },
    });
    writeFileSync(path.join(troupe.workspace, "old.txt"), "old");
    const events: StoredEvent[] = [];
    try {
      const paused = await troupe.run({ task: "clean up and look up", threadId: "branches" }, { onEvent: (event) => events.push(event) });
      expect(paused.status).toBe("interrupted");
      // Both other subtasks finished while s1 waited for its approval.
      expect(eventsOf(events, "subtask-end").map((event) => event.subtaskId).sort()).toEqual(["s2", "s3"]);
      const approval = eventsOf(events, "approval-request")[0];
      const ended = eventsOf(events, "subtask-end").map((event) => event.seq);
      expect(approval?.seq).toBeGreaterThan(Math.max(...ended));
      const done = await troupe.resume("branches", { decision: "approve" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(done.status).toBe("completed");
      expect(done.plan.map((view) => [view.id, view.status, view.attempts])).toEqual([
        ["s1", "done", 1],
        ["s2", "done", 1],
        ["s3", "done", 1],
      ]);
      // s2 and s3 ran once: their results came back from their saved tasks on resume.
      expect(model.callsFor("research", "s2")).toHaveLength(1);
      expect(model.callsFor("research", "s3")).toHaveLength(1);
      expect(existsSync(path.join(troupe.workspace, "old.txt"))).toBe(false);
    } finally {
      troupe.close();
    }
  });
});

describe("a crash at a random moment", () => {
  // Up to 12 trials, each a cold CLI start, a kill and a resume: a few patiences' worth on a busy machine.
  it("resumes with every subtask's own result, and no finished subtask runs again", { timeout: 2 * TEST_TIMEOUT_MS }, async () => {
    // Uneven latencies make the order in which subtasks finish differ from the order they are
    // called in, the trap for identities that follow call order.
    const plan = [
      subtask("s1", "research", "Slow start", {}),
      subtask("s2", "research", "Fast start"),
      subtask("s3", "research", "After the fast one", { dependsOn: ["s2"] }),
      subtask("s4", "research", "After the slow one", { dependsOn: ["s1"] }),
      subtask("s5", "research", "After both", { dependsOn: ["s3", "s4"] }),
      subtask("s6", "research", "Alone"),
    ];
    const latency: Record<string, number> = { s1: 400, s2: 60, s3: 120, s4: 200, s5: 80, s6: 300 };
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    // A trial proves the claim only when the kill left both finished subtasks (which must not run
    // again) and unfinished ones (which the resume must run). A kill before any subtask finished,
    // or after all had, proves nothing about it: such a trial is counted apart, and the next kill
    // point moves later or earlier, until enough trials prove it.
    const required = 3;
    const maxTrials = 12;
    const proving: string[] = [];
    const vacuous: string[] = [];
    // How many research calls have ended when the kill comes (then a random 0–150 ms more).
    let killAfterEnded = 1;
    for (let trial = 0; trial < maxTrials && proving.length < required; trial += 1) {
      const directory = tempDir();
      const log = path.join(directory, "calls.jsonl");
      const script = writeScript(directory, "script.json", [
        planStep(plan, { times: 10 }),
        ...plan.map((item) => finalStep(item.id, `result of ${item.id}`, { delayMs: latency[item.id], times: 10 })),
        reviewStep(0.9, {}, { times: 10 }),
        answerStep("done", { times: 10 }),
      ]);
      const env = { ...cleanEnv(), TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: script, TROUPE_SCRIPT_LOG: log };
      const child = spawn(process.execPath, [CLI, "run", "six lookups", "--thread", "crash", "--concurrency", "6"], { cwd: directory, env, stdio: "ignore" });
      let alive = true;
      const exited = new Promise<void>((resolve) =>
        child.on("exit", () => {
          alive = false;
          resolve();
        }),
      );
      // Kill once the plan is running, after some research calls ended, at a random moment after.
      const ended = (): number => readScriptLog(log).filter((line) => line.role === "research" && line.phase === "end").length;
      await waitFor(() => (!alive || ended() >= killAfterEnded ? true : undefined), "the plan to start", 10);
      await sleep(Math.round(random() * 150));
      child.kill("SIGKILL");
      await exited;
      const finishedBefore = subtasksEnded(path.join(directory, ".troupe", "troupe.db"));
      const before = readScriptLog(log).filter((line) => line.phase === "start" && line.role === "research").length;
      const resumed = await runCli(["resume", "crash", "--json"], { cwd: directory, env: { TROUPE_SCRIPT: script, TROUPE_SCRIPT_LOG: log } });
      let result: RunResult;
      if (resumed.code === 2 && /no run found/.test(resumed.stderr)) {
        // Killed before the run was recorded: it starts again from nothing.
        result = JSON.parse((await runCli(["run", "six lookups", "--thread", "crash", "--json"], { cwd: directory, env: { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: script, TROUPE_SCRIPT_LOG: log } })).stdout) as RunResult;
      } else {
        expect(resumed.code, resumed.stderr).toBe(0);
        result = JSON.parse(resumed.stdout) as RunResult;
      }
      expect(result.status).toBe("completed");
      for (const view of result.plan) expect(view.summary, `trial ${trial}: ${view.id}`).toBe(`result of ${view.id}`);
      const calls = readScriptLog(log).filter((line) => line.phase === "start" && line.role === "research");
      for (const id of finishedBefore) expect(calls.filter((line) => line.subtask === id), `trial ${trial}: ${id} finished before the kill`).toHaveLength(1);
      // The log only grows, so the resume's calls are the lines after the kill's count.
      const afterKill = calls.slice(before).map((line) => line.subtask);
      for (const id of afterKill) expect(finishedBefore.has(id ?? ""), `trial ${trial}: ${id} ran again after the kill`).toBe(false);
      const label = `trial ${trial}: killed after ${killAfterEnded} ended call(s); ${finishedBefore.size} finished before, ${afterKill.length} call(s) after`;
      if (finishedBefore.size > 0 && afterKill.length > 0) {
        proving.push(label);
        // A new kill point for the next trial, among the ones that leave work on both sides.
        killAfterEnded = 1 + Math.floor(random() * (plan.length - 2));
      } else {
        vacuous.push(label);
        // Too early (nothing finished) moves the kill later; too late (nothing left) moves it earlier.
        killAfterEnded = finishedBefore.size === 0 ? Math.min(killAfterEnded + 1, plan.length - 1) : Math.max(killAfterEnded - 1, 1);
      }
    }
    expect(proving.length, `trials that proved nothing: ${vacuous.join("; ") || "none"}`).toBeGreaterThanOrEqual(required);
  });
});

/** The subtasks a killed run's database records as finished (`subtask-end`); none when it has no events yet. */
function subtasksEnded(database: string): Set<string> {
  const finished = new Set<string>();
  if (!existsSync(database)) return finished;
  const db = new Database(database, { readonly: true, fileMustExist: true });
  try {
    for (const row of db.prepare("SELECT data FROM events WHERE type = 'subtask-end'").all() as Array<{ data: string }>) finished.add((JSON.parse(row.data) as { subtaskId: string }).subtaskId);
  } catch {
    // no events table yet: nothing finished
  } finally {
    db.close();
  }
  return finished;
}

describe("streamed planning", () => {
  /** The planner's step, its plan's arguments streamed in pieces of 40 characters, 25 ms apart. */
  const streamedPlan = (subtasks: PlannedSubtask[], extra: Partial<ScriptStep> = {}): ScriptStep => ({ ...planStep(subtasks), streamPieces: 40, pieceDelayMs: 25, ...extra });

  it("starts the first subtasks while the planner is still writing the rest", async () => {
    const plan = [
      subtask("s1", "research", "First lookup"),
      subtask("s2", "research", "Second lookup"),
      subtask("s3", "research", "Third lookup, after the first", { dependsOn: ["s1"] }),
      subtask("s4", "research", "Fourth lookup"),
    ];
    const model = new ScriptedChatModel({
      // The planner's last piece waits until s1's worker call has started: if troupe waited for the
      // whole plan before starting a subtask, the run would never get past the planner.
      steps: [streamedPlan(plan, { holdLastPieceFor: { role: "research", subtask: "s1" } }), ...plan.map((item) => finalStep(item.id, `result of ${item.id}`)), reviewStep(0.9), answerStep("four lookups")],
    });
    const directory = tempDir();
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "four lookups" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("completed");
      const ready = eventsOf(events, "plan-ready")[0];
      const firstStart = eventsOf(events, "subtask-start").find((event) => event.subtaskId === "s1");
      // s1 started (and its dependent s3 after it) before the plan was complete.
      expect(firstStart?.seq).toBeLessThan(ready?.seq ?? 0);
      expect(eventsOf(events, "subtask-planned").map((event) => event.subtask.id)).toEqual(["s1", "s2", "s3", "s4"]);
      const planner = model.callsFor("planner")[0];
      const worker = model.callsFor("research", "s1")[0];
      // The worker's model call began while the planner's reply was still streaming: it is the call that let the last piece go.
      expect(planner?.releasedBy).toBe(worker?.index);
      expect(planner?.piecesSent).toBe(planner?.piecesTotal);
      expect(result.plan.map((view) => [view.id, view.status, view.attempts])).toEqual([
        ["s1", "done", 1],
        ["s2", "done", 1],
        ["s3", "done", 1],
        ["s4", "done", 1],
      ]);
    } finally {
      troupe.close();
    }
  });

  it("drops what started from a plan that turns out invalid, and runs the repaired plan", async () => {
    const model = new ScriptedChatModel({
      steps: [
        // The whole plan refers to a subtask that does not exist: invalid, though s1 read well on its own.
        // Its last piece waits until s1 has started, so s1 is running when the plan turns out invalid.
        streamedPlan([subtask("s1", "research", "Early lookup"), subtask("s2", "research", "Uses a ghost", { dependsOn: ["s9"] })], { holdLastPieceFor: { role: "research", subtask: "s1" } }),
        finalStep("s1", "early result", { contains: "Early lookup", delayMs: 400 }),
        planStep([subtask("s1", "research", "Repaired lookup")], { contains: "s9" }),
        finalStep("s1", "repaired result", { contains: "Repaired lookup" }),
        // The repaired plan has one subtask: its worker's text is the answer (the fast route), no synthesizer call.
        reviewStep(0.9),
      ],
    });
    const directory = tempDir();
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "look it up" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(eventsOf(events, "plan-invalid")[0]?.errors).toEqual(['subtask s2 depends on "s9", which is not in the plan (dependsOn may name: s1)']);
      // Both streamed subtasks were taken (s2 waiting for a s9 that never came); s1 started, then was dropped with the plan.
      expect(eventsOf(events, "subtask-planned").map((event) => event.subtask.label)).toEqual(["Early lookup", "Uses a ghost"]);
      expect(eventsOf(events, "subtask-start").map((event) => event.label)).toEqual(["Early lookup", "Repaired lookup"]);
      expect(eventsOf(events, "subtask-end").map((event) => event.summary)).toEqual(["repaired result"]);
      expect(result.plan).toMatchObject([{ id: "s1", label: "Repaired lookup", status: "done", attempts: 1, summary: "repaired result" }]);
      expect(result.answer).toBe("repaired result");
    } finally {
      troupe.close();
    }
  });

  it("waits for the whole plan when the plan needs approval", async () => {
    const plan = [subtask("s1", "research", "First"), subtask("s2", "research", "Second")];
    const model = new ScriptedChatModel({ steps: [streamedPlan(plan), finalStep("s1", "one"), finalStep("s2", "two"), reviewStep(0.9), answerStep("both")] });
    const directory = tempDir();
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    const events: StoredEvent[] = [];
    try {
      const paused = await troupe.run({ task: "two things", approvePlan: true, threadId: "approve" }, { onEvent: (event) => events.push(event) });
      expect(paused.interrupt?.kind).toBe("plan-approval");
      expect(eventsOf(events, "subtask-planned")).toEqual([]);
      expect(eventsOf(events, "subtask-start")).toEqual([]);
      const done = await troupe.resume("approve", { decision: "approve" });
      model.assertDone();
      expect(done.status).toBe("completed");
    } finally {
      troupe.close();
    }
  });
});
