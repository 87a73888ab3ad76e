import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events.js";
import type { PlannedSubtask } from "../../src/core/plan.js";
import { checkPlan } from "../../src/core/plan-check.js";
import { LIMITS } from "../../src/core/limits.js";
import { planStep, subtask } from "../../src/testing/script.js";
import { envelope, makeApp, waitFor } from "../server-helpers.js";

/**
 * One plan check, five ways in: the same plan, fed to the planner node (a run through the
 * library), `POST /api/v1/plan`, the task service (`POST /api/v1/execute`), the eval runner
 * (`POST /api/v1/evals`) and a fork's edited plan, gets the same verdict from each — the one
 * `core/plan-check.ts` gives.
 */

type Verdict = { subtasks: PlannedSubtask[]; notes: string[] } | { errors: string[] };
type App = Awaited<ReturnType<typeof makeApp>>;

const write = (id: string, fields: Partial<PlannedSubtask> = {}): PlannedSubtask =>
  subtask(id, "execute", "Write out.txt", { tool: "file_write", args: { path: { value: "out.txt" }, content: { value: "x" } }, ...fields });
const read = (id: string, fields: Partial<PlannedSubtask> = {}): PlannedSubtask => subtask(id, "research", "Read out.txt", { tool: "file_read", args: { path: { value: "out.txt" } }, ...fields });

/** Plans of each kind: valid, needing resource ordering, and invalid in each way a plan can be. */
const PLANS: Array<[string, PlannedSubtask[]]> = [
  ["valid", [subtask("s1", "research", "Look it up"), subtask("s2", "code", "Work it out", { dependsOn: ["s1"] })]],
  ["needs resource ordering (read after write)", [write("s1"), read("s2")]],
  ["unknown agent", [subtask("s1", "research", "Look it up"), subtask("s2", "wizard", "Cast it")]],
  ["unknown tool", [subtask("s1", "research", "Look it up"), subtask("s2", "execute", "Beam it", { tool: "teleport" })]],
  ["agent without the tool", [subtask("s1", "research", "Look it up"), write("s2", { agent: "research" })]],
  ["no agent with the capability", [subtask("s1", "research", "Look it up"), subtask("s2", "research", "Fly", { capability: "flying" })]],
  ["missing dependency", [subtask("s1", "research", "Look it up"), subtask("s2", "code", "Work it out", { dependsOn: ["s9"] })]],
  ["cycle", [subtask("s1", "research", "A", { dependsOn: ["s2"] }), subtask("s2", "code", "B", { dependsOn: ["s1"] })]],
  ["unclear resource order (write after read)", [read("s1"), write("s2")]],
];

/** The verdict a run's events show: its first plan-invalid, else its plan-ready. */
function verdictOfEvents(events: readonly StoredEvent[]): Verdict | undefined {
  for (const event of events) {
    if (event.type === "plan-invalid") return { errors: event.errors };
    if (event.type === "plan-ready") return { subtasks: event.subtasks, notes: event.notes ?? [] };
  }
  return undefined;
}

async function eventVerdict(app: App, runId: string): Promise<Verdict> {
  return waitFor(async () => verdictOfEvents(await app.troupe.store.events.list(runId, 0, 10_000)), `a plan verdict of run ${runId}`);
}

async function viaPlanner(app: App): Promise<{ verdict: Verdict; runId: string }> {
  const result = await app.troupe.run({ task: "the task", approvePlan: true });
  return { verdict: await eventVerdict(app, result.runId), runId: result.runId };
}

/** A fork of a stopped run with the plan edited to this one: the plan the fork's thread starts with, or why it is refused. */
async function viaFork(app: App, runId: string, plan: PlannedSubtask[]): Promise<{ subtasks: PlannedSubtask[] } | { errors: string[] }> {
  const record = await app.troupe.store.runs.get(runId);
  let from: string | undefined;
  for await (const snapshot of app.troupe.graph.getStateHistory({ configurable: { thread_id: record?.threadId } })) {
    if ((snapshot.values as { runId?: string }).runId === runId && snapshot.next.length > 0 && snapshot.metadata?.source !== "input") from = snapshot.config.configurable?.checkpoint_id as string;
  }
  try {
    const fork = await app.troupe.enqueueFork(runId, { from: from as string, plan });
    const seeded = await app.troupe.graph.getState({ configurable: { thread_id: fork.threadId } });
    return { subtasks: (seeded.values as { plan: PlannedSubtask[] }).plan };
  } catch (error) {
    expect(error).toMatchObject({ code: "invalid_plan" });
    return { errors: (error as { data: { errors: string[] } }).data.errors };
  }
}

async function viaPlanRoute(app: App): Promise<Verdict> {
  const response = await app.app.inject({ method: "POST", url: "/api/v1/plan", payload: { task: "the task" } });
  const body = envelope<{ subtasks: PlannedSubtask[]; notes: string[]; errors?: string[] }>(response);
  if (response.statusCode === 200) return { subtasks: body.data.subtasks, notes: body.data.notes };
  expect([response.statusCode, body.code]).toEqual([502, "planner_failed"]);
  return { errors: body.data.errors as string[] };
}

async function viaTaskService(app: App): Promise<Verdict> {
  const response = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "the task", approve_plan: true } });
  expect(response.statusCode).toBe(202);
  return eventVerdict(app, envelope<{ task_id: string }>(response).data.task_id);
}

async function viaEvalRunner(app: App): Promise<Verdict> {
  const response = await app.app.inject({ method: "POST", url: "/api/v1/evals", payload: { suite: [{ id: "case", task: "the task" }] } });
  expect(response.statusCode).toBe(202);
  const evalId = envelope<{ eval_id: string }>(response).data.eval_id;
  const runId = await waitFor(async () => {
    const runs = await app.troupe.store.runs.list({ limit: 50 });
    return runs.find((run) => run.evalId === evalId)?.id;
  }, `the run of eval ${evalId}`);
  const verdict = await eventVerdict(app, runId);
  await app.app.inject({ method: "POST", url: `/api/v1/evals/${evalId}/cancel` });
  return verdict;
}

describe("one plan check behind every entry point", () => {
  it.each(PLANS)("%s: the planner node, POST /plan, the task service, the eval runner and a fork agree with core's checkPlan", async (_kind, plan) => {
    // Every entry point asks the planner up to 1 + planRepairAttempts times for an invalid plan.
    const app = await makeApp({ steps: Array.from({ length: 4 * (LIMITS.planRepairAttempts + 1) + 2 }, () => planStep(plan)) });
    const expected = checkPlan(plan, app.troupe, { maxSubtasks: LIMITS.maxSubtasks });
    const planner = await viaPlanner(app);
    const verdicts = { planner: planner.verdict, planRoute: await viaPlanRoute(app), taskService: await viaTaskService(app), evalRunner: await viaEvalRunner(app) };
    expect(verdicts).toEqual({ planner: expected, planRoute: expected, taskService: expected, evalRunner: expected });
    // A fork's edited plan is judged by the same check (a fork keeps the plan, not the notes).
    expect(await viaFork(app, planner.runId, plan)).toEqual("errors" in expected ? expected : { subtasks: expected.subtasks });
  });

  it("the plans above cover every verdict: valid as written, valid with an added dependency, and invalid", async () => {
    const app = await makeApp();
    const verdicts = PLANS.map(([kind, plan]) => [kind, checkPlan(plan, app.troupe)] as const);
    const [valid, ordered, ...invalid] = verdicts;
    expect(valid?.[1]).toEqual({ subtasks: PLANS[0]?.[1], notes: [] });
    expect(ordered?.[1]).toEqual({ subtasks: [write("s1"), read("s2", { dependsOn: ["s1"] })], notes: ["s2 now runs after s1: it reads what the other writes, out.txt"] });
    for (const [kind, verdict] of invalid) expect([kind, "errors" in verdict && verdict.errors.length > 0]).toEqual([kind, true]);
  });
});
