import { SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { afterEach, describe, expect, it } from "vitest";
import { RUN_EVENT_CALLBACK, type RunEvent } from "../../src/core/events.js";
import { modelCallMetadata } from "../../src/providers/call-metadata.js";
import { ServerMetrics } from "../../src/server/metrics.js";
import { RunObserver } from "../../src/server/run-observer.js";
import type { ToolCallReport } from "../../src/tools/registry.js";
import { envelope, makeApp, parseSse, waitForStatus } from "../server-helpers.js";

/** A task with a worker's step (the write of both), so every role runs: the README's task is answered by its plan's template, with no synthesizer. */
const TASK = "compute 17% of 2,340 and 1% of 2,340, then save both to result.txt";
const MODEL = { provider: "offline", model: "rules-v1" };

const providers: TracerProvider[] = [];
afterEach(async () => {
  for (const provider of providers.splice(0)) await provider.shutdown();
});

/** An observer whose spans land in memory, and the spans it ended so far. */
function observed() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  providers.push(provider);
  const metrics = new ServerMetrics();
  const observer = new RunObserver({ taskId: "task-1", threadId: "thread-1", resumed: false, metrics, tracer: provider.getTracer("test") });
  return { observer, metrics, spans: () => exporter.getFinishedSpans() };
}

/** Each span as `name <- parent name` (the run's parent is outside the trace). */
function tree(spans: ReadableSpan[]): string[] {
  const byId = new Map(spans.map((span) => [span.spanContext().spanId, span]));
  return spans.map((span) => `${span.name} <- ${byId.get(span.parentSpanContext?.spanId ?? "")?.name ?? "-"}`).sort();
}

/** A model call as LangChain reports it to a callback handler: start with the call's metadata, then end. */
function modelCall(observer: RunObserver, runId: string, role: "planner" | "worker" | "critic" | "synthesizer", subtaskId?: string): void {
  observer.handleChatModelStart({ lc: 1, type: "not_implemented", id: [] }, [[]], runId, undefined, undefined, undefined, modelCallMetadata(role, MODEL, subtaskId));
  observer.handleLLMEnd({ generations: [] }, runId);
}

function toolReport(tool: string, subtaskId: string): ToolCallReport {
  return { tool, args: {}, outcome: { ok: true, value: "ok" }, durationMs: 3, context: { subtaskId, agent: "worker" }, audit: {} } as unknown as ToolCallReport;
}

describe("RunObserver, fed the run's events only", () => {
  it("names the current step and builds run → step → subtask → call spans without any LangGraph node or task name", () => {
    const { observer, spans } = observed();
    // Delivered as the graph delivers them: LangChain custom events. No handleChainStart is ever called.
    const send = (event: RunEvent): void => observer.handleCustomEvent(RUN_EVENT_CALLBACK, event);
    const labels: Array<string | undefined> = [observer.currentStep()];
    send({ type: "step-start", step: "intake" });
    labels.push(observer.currentStep());
    send({ type: "step-end", step: "intake", outcome: "done", durationMs: 1 });
    send({ type: "step-start", step: "planner" });
    send({ type: "step-start", step: "plan" });
    labels.push(observer.currentStep());
    modelCall(observer, "call-plan", "planner");
    // A streamed plan: its subtasks start while the planner's call still runs.
    send({ type: "subtask-start", subtaskId: "s1", label: "compute", agent: "worker", attempt: 1 });
    labels.push(observer.currentStep());
    modelCall(observer, "call-s1", "worker", "s1");
    observer.toolCall(toolReport("calculator", "s1"));
    send({ type: "subtask-end", subtaskId: "s1", status: "done", durationMs: 5 });
    send({ type: "step-end", step: "plan", outcome: "done", durationMs: 9 });
    send({ type: "subtask-start", subtaskId: "s2", label: "save", agent: "worker", attempt: 1 });
    modelCall(observer, "call-s2", "worker", "s2");
    observer.toolCall(toolReport("file_write", "s2"));
    send({ type: "subtask-end", subtaskId: "s2", status: "done", durationMs: 5 });
    send({ type: "subtask-skip", subtaskId: "s3", reason: "not run: s2 failed" });
    labels.push(observer.currentStep());
    send({ type: "step-end", step: "planner", outcome: "done", durationMs: 12 });
    send({ type: "step-start", step: "critic" });
    labels.push(observer.currentStep());
    modelCall(observer, "call-critic", "critic");
    send({ type: "step-end", step: "critic", outcome: "failed", durationMs: 2, error: "the critic broke" });
    send({ type: "step-start", step: "approve_answer" });
    labels.push(observer.currentStep());
    send({ type: "step-end", step: "approve_answer", outcome: "paused", durationMs: 0 });
    labels.push(observer.currentStep());
    observer.finish("interrupted");

    expect(labels).toEqual([undefined, "starting", "planning", "running s1", "planning", "reviewing", "waiting for answer approval", undefined]);
    expect(tree(spans())).toEqual(
      [
        "run <- -",
        "node intake <- run",
        "node planner <- run",
        "plan <- node planner",
        "chat rules-v1 <- plan",
        "subtask s1 <- node planner",
        "chat rules-v1 <- subtask s1",
        "execute_tool calculator <- subtask s1",
        "subtask s2 <- node planner",
        "chat rules-v1 <- subtask s2",
        "execute_tool file_write <- subtask s2",
        "subtask s3 <- node planner",
        "node critic <- run",
        "chat rules-v1 <- node critic",
        "node approve_answer <- run",
      ].sort(),
    );
    const named = (name: string): ReadableSpan | undefined => spans().find((span) => span.name === name);
    expect(named("node planner")?.attributes["troupe.node"]).toBe("planner");
    expect(named("subtask s1")?.attributes).toMatchObject({ "troupe.subtask_id": "s1", "troupe.agent": "worker", "troupe.subtask.status": "done" });
    expect(named("subtask s3")?.attributes["troupe.subtask.status"]).toBe("skipped");
    // A failed step is an error; a step paused for a person is not.
    expect(named("node critic")?.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "the critic broke" });
    expect(named("node approve_answer")?.status.code).toBe(SpanStatusCode.UNSET);
    expect(spans().every((span) => span.ended)).toBe(true);
  });

  it("hangs a resumed run's calls from the subtask that was running when it paused", () => {
    const { observer, spans } = observed();
    observer.resumeWith(["s2"]);
    expect(observer.currentStep()).toBe("running s2");
    observer.event({ type: "step-start", step: "execute" });
    // Its start was before the pause, so no subtask-start comes again; its first call opens its span.
    modelCall(observer, "call-s2", "worker", "s2");
    observer.event({ type: "subtask-end", subtaskId: "s2", status: "failed", durationMs: 4, error: "no" });
    observer.event({ type: "step-end", step: "execute", outcome: "done", durationMs: 5 });
    observer.finish("completed");
    expect(tree(spans())).toEqual(["chat rules-v1 <- subtask s2", "node execute <- run", "run <- -", "subtask s2 <- node execute"]);
  });

  it("follows a real run from its stored events: every role's step is emitted by the graph, in order, and gives the same span tree", async () => {
    const app = await makeApp();
    const id = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: TASK } })).data.task_id;
    await waitForStatus(app, id, ["completed"]);
    const events = parseSse((await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/events` })).body).map((event) => event.data as unknown as RunEvent);
    const steps = events.filter((event) => event.type === "step-start" || event.type === "step-end").map((event) => `${event.type === "step-start" ? "+" : "-"}${event.step}`);
    expect(steps).toEqual(["+intake", "-intake", "+planner", "+plan", "-plan", "-planner", "+critic", "-critic", "+synthesizer", "-synthesizer", "+finalize", "-finalize"]);
    expect(events.filter((event) => event.type === "step-end").every((event) => event.outcome === "done" && event.durationMs >= 0)).toBe(true);

    const { observer, spans } = observed();
    const labels = new Set<string>();
    for (const event of events) {
      observer.event(event);
      const label = observer.currentStep();
      if (label !== undefined) labels.add(label);
    }
    observer.finish("completed");
    expect([...labels]).toEqual(expect.arrayContaining(["starting", "planning", "reviewing", "answering", "finishing"]));
    expect([...labels].some((label) => label.startsWith("running s"))).toBe(true);
    const shape = tree(spans());
    expect(shape).toEqual(expect.arrayContaining(["node planner <- run", "plan <- node planner", "subtask s1 <- node planner", "subtask s2 <- node planner", "subtask s3 <- node planner", "node critic <- run", "node synthesizer <- run"]));
  });
});
