import { describe, expect, it } from "vitest";
import { TaskGraph, TaskGraphMermaid } from "../../src/server/schemas.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { envelope, makeApp, parseSse, waitFor, waitForStatus } from "../server-helpers.js";

const TASK = "compute 17% of 2,340 and save it to result.txt";

async function completedTask(app: Awaited<ReturnType<typeof makeApp>>): Promise<string> {
  const id = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: TASK } })).data.task_id;
  await waitForStatus(app, id, ["completed"]);
  return id;
}

/** Reads an SSE response from a listening server, event by event, until it ends or `stop` says so. */
async function readStream(url: string, headers: Record<string, string>, stop: (events: Array<{ id: number; event: string; data: Record<string, unknown> }>) => boolean) {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const events: Array<{ id: number; event: string; data: Record<string, unknown> }> = [];
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let ended = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      ended = true;
      break;
    }
    buffer += value;
    const cut = buffer.lastIndexOf("\n\n");
    if (cut < 0) continue;
    events.push(...parseSse(buffer.slice(0, cut + 2)));
    buffer = buffer.slice(cut + 2);
    if (stop(events)) break;
  }
  if (!ended) controller.abort();
  return { response, events, ended };
}

describe("GET /tasks/:id/events (SSE)", () => {
  it("replays a finished run's events in order and resumes after Last-Event-ID (or ?after=)", async () => {
    const app = await makeApp();
    const id = await completedTask(app);
    const response = await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/events` });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/event-stream/);
    expect(response.body.startsWith("retry: 2000\n\n")).toBe(true);
    const events = parseSse(response.body);
    expect(events.map((event) => event.id)).toEqual(events.map((_, index) => index + 1));
    expect(events.every((event) => event.data.type === event.event && event.data.seq === event.id && event.data.runId === id)).toBe(true);
    const types = events.map((event) => event.event);
    expect(types[0]).toBe("run-start");
    expect(types.at(-1)).toBe("run-end");
    expect(events.at(-1)?.data.status).toBe("completed");
    // The offline planner's direct tool steps are verified results: review auto decides to skip the critic (no critic-verdict).
    expect(types).toEqual(expect.arrayContaining(["plan-ready", "subtask-start", "tool-call", "subtask-end", "review-decide", "answer"]));
    expect(types).not.toContain("critic-verdict");
    expect(types.indexOf("plan-ready")).toBeLessThan(types.indexOf("subtask-start"));
    expect(types.lastIndexOf("subtask-end")).toBeLessThan(types.indexOf("review-decide"));
    expect(types.indexOf("review-decide")).toBeLessThan(types.indexOf("answer"));

    const resumed = parseSse((await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/events`, headers: { "last-event-id": "3" } })).body);
    expect(resumed.map((event) => event.id)).toEqual(events.slice(3).map((event) => event.id));
    const after = parseSse((await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/events?after=5` })).body);
    expect(after[0]?.id).toBe(6);
    // Nothing left after the last event of an ended task: 204, so EventSource stops reconnecting.
    const last = String(events.at(-1)?.id);
    expect((await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/events`, headers: { "last-event-id": last } })).statusCode).toBe(204);
  });

  it("streams a live run as it goes, answer tokens included, stays open across an approval, and resumes after Last-Event-ID", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "research", "Look it up"), subtask("s2", "research", "Check it", { dependsOn: ["s1"] })]),
        finalStep("s1", "found", { delayMs: 100 }),
        finalStep("s2", "checked", { delayMs: 100 }),
        reviewStep(0.9),
        answerStep("The answer is **found** and checked."),
      ],
    });
    const address = await app.app.listen({ host: "127.0.0.1", port: 0 });
    const id = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "look it up", approve_plan: true } })).data.task_id;
    const url = `${address}/api/v1/tasks/${id}/events`;
    // First connection: read until the run pauses for approval; the stream stays open.
    const first = await readStream(url, {}, (events) => events.some((event) => event.event === "run-end"));
    expect(first.ended).toBe(false);
    // Steps (step-start/step-end) are checked apart: the planner's, then the approval's, paused.
    const notSteps = (type: string): boolean => type !== "step-start" && type !== "step-end";
    expect(first.events.map((event) => event.event).filter(notSteps)).toEqual(["run-start", "plan-ready", "route-decide", "approval-request", "run-end"]);
    expect(first.events.filter((event) => event.event === "step-end").map((event) => `${String(event.data.step)} ${String(event.data.outcome)}`)).toEqual([
      "intake done",
      "plan done",
      "planner done",
      "approve_plan paused",
    ]);
    expect(first.events.at(-1)?.data.status).toBe("interrupted");
    const waiting = first.events.at(-1)?.id ?? 0;
    await app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload: { decision: "approve" } });
    // Second connection picks up after the last event seen, and ends with the run.
    const second = await readStream(url, { "last-event-id": String(waiting) }, () => false);
    expect(second.ended).toBe(true);
    const ids = second.events.map((event) => event.id);
    expect(ids[0]).toBe(waiting + 1);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    const types = second.events.map((event) => event.event);
    // The approval's step runs again on resume, then the plan's execution, the critic, the synthesizer and finishing.
    expect(second.events.filter((event) => event.event === "step-start").map((event) => event.data.step)).toEqual(["approve_plan", "execute", "critic", "synthesizer", "finalize"]);
    expect(second.events.filter((event) => event.event === "step-end").every((event) => event.data.outcome === "done")).toBe(true);
    expect(types.filter((type) => type !== "answer-token" && notSteps(type))).toEqual([
      "run-start",
      "subtask-start",
      "subtask-end",
      "subtask-start",
      "subtask-end",
      "review-decide",
      "critic-verdict",
      "answer",
      "run-end",
    ]);
    const tokens = second.events.filter((event) => event.event === "answer-token").map((event) => event.data.text as string);
    expect(tokens.length).toBeGreaterThan(3);
    expect(tokens.join("")).toBe("The answer is **found** and checked.");
    expect(types.lastIndexOf("answer-token")).toBeLessThan(types.indexOf("answer"));
    expect(second.events.at(-1)?.data).toMatchObject({ type: "run-end", status: "completed" });
    expect(app.hub.watchers(id)).toBe(0);
  });

  it("delivers live events to a stream opened while the run goes (no gap between replay and live)", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "research", "Slow one")]), finalStep("s1", "done", { delayMs: 300 }), reviewStep(0.9), answerStep("ok")],
    });
    const address = await app.app.listen({ host: "127.0.0.1", port: 0 });
    const id = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "slow" } })).data.task_id;
    await waitFor(() => (app.model?.calls.some((call) => call.subtask === "s1") ? true : undefined), "s1 to start");
    const stream = await readStream(`${address}/api/v1/tasks/${id}/events`, {}, () => false);
    expect(stream.ended).toBe(true);
    const ids = stream.events.map((event) => event.id);
    expect(ids).toEqual(ids.map((_, index) => index + 1));
    expect(stream.events.map((event) => event.event).filter((type) => type !== "answer-token" && type !== "step-start" && type !== "step-end")).toEqual([
      "run-start",
      "plan-ready",
      "route-decide",
      "subtask-start",
      "subtask-end",
      "review-decide",
      "critic-verdict",
      "answer",
      "run-end",
    ]);
  });
});

describe("GET /tasks/:id/graph", () => {
  it("draws the subtasks with statuses and data dependencies, as JSON or Mermaid", async () => {
    const app = await makeApp();
    const id = await completedTask(app);
    const graph = TaskGraph.parse(envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/graph` })).data);
    // Issue 4's renderer (the same as `troupe runs show --json`): SUCCESS, not the plan's "done".
    expect(graph.nodes.map((node) => [node.id, node.agent, node.status])).toEqual([
      ["s1", "execute", "SUCCESS"],
      ["s2", "execute", "SUCCESS"],
    ]);
    // s1 is a direct calculator step: its summary is the tool's.
    expect(graph.nodes[0]?.summary).toBe("17% of 2,340 = 397.8");
    expect(graph.nodes[0]?.durationMs).toEqual(expect.any(Number));
    expect(graph.edges).toEqual([{ from: "s1", to: "s2", label: "content" }]);
    // Each subtask's times, and s2 waited for s1: the chain is the critical path, within the makespan.
    const [first, second] = graph.nodes;
    expect(first?.endedAt).toBeLessThanOrEqual(second?.startedAt ?? 0);
    expect(second?.durationMs).toBe((second?.endedAt ?? 0) - (second?.startedAt ?? 0));
    expect(graph.criticalPath).toEqual(["s1", "s2"]);
    expect(graph.makespanMs).toBe((second?.endedAt ?? 0) - (first?.startedAt ?? 0));
    expect(graph.criticalPathMs).toBe((first?.durationMs ?? 0) + (second?.durationMs ?? 0));
    const mermaid = TaskGraphMermaid.parse(envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/graph?format=mermaid` })).data);
    expect(mermaid.mermaid).toMatch(/^flowchart TD/);
    expect(mermaid.mermaid).toContain('n_s1 -->|"content"| n_s2');
    expect(mermaid.mermaid).toContain(":::success");
    expect(mermaid.mermaid).toContain("class n_s1,n_s2 critical");
  });

  it("is empty for a task that has not started", async () => {
    const app = await makeApp({ config: { maxRunning: 1 }, steps: [planStep([subtask("s1", "research", "Slow")]), finalStep("s1", "x", { gate: "never" })] });
    await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "first" } });
    const queued = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "second" } })).data.task_id;
    const graph = envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${queued}/graph` })).data;
    expect(graph).toEqual({ nodes: [], edges: [], criticalPath: [], criticalPathMs: null, makespanMs: null });
  });
});
