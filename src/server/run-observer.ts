import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Serialized } from "@langchain/core/load/serializable";
import type { BaseMessage } from "@langchain/core/messages";
import type { LLMResult } from "@langchain/core/outputs";
import type { ChainValues } from "@langchain/core/utils/types";
import { type Context, ROOT_CONTEXT, type Span, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { errorMessage } from "../core/errors.js";
import { RUN_EVENT_CALLBACK, type RunEvent, type RunStep } from "../core/events.js";
import { readModelCallMetadata } from "../providers/call-metadata.js";
import type { ModelRole } from "../providers/provider.js";
import type { ModelChoice } from "../providers/registry.js";
import type { ToolCallReport } from "../tools/registry.js";
import type { ServerMetrics } from "./metrics.js";
import type { TurnGate } from "./turn-gate.js";

const RUN_ID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;

/** What a person reads as the current step while a step of the run is at work. */
const STEP_LABEL: Record<RunStep, string> = {
  intake: "starting",
  planner: "planning",
  plan: "planning",
  approve_plan: "waiting for plan approval",
  ask_human: "waiting for an answer",
  execute: "running the plan",
  critic: "reviewing",
  synthesizer: "answering",
  approve_answer: "waiting for answer approval",
  finalize: "finishing",
};

interface OpenStep {
  step: RunStep;
  span?: Span;
}

interface ModelRun {
  /** The model called (after any fallback), as the call says; unknown for a call troupe did not make. */
  choice: ModelChoice;
  span?: Span;
}

export interface RunObserverOptions {
  taskId: string;
  threadId: string;
  resumed: boolean;
  metrics: ServerMetrics;
  tracer?: Tracer;
  /** The trace the run belongs to (the submitting request's), if any. */
  parent?: Context;
  /** Shared by every run of a server: one node start per turn of the event loop. */
  gate?: TurnGate;
}

/**
 * Watches one drive of a run: from the run's own events (steps and subtasks, which reach it as
 * LangChain custom events in step with the work) it knows the current step and makes the spans
 * run → step → subtask; from each model call's metadata it counts calls for Prometheus and makes
 * their spans, under their subtask or step. Which step or subtask is at work never comes from
 * LangGraph's node or task names (the turn gate only asks whether a chain is a node's own run).
 */
export class RunObserver extends BaseCallbackHandler {
  name = "troupe-run-observer";
  override awaitHandlers = true;
  readonly #options: RunObserverOptions;
  readonly #runSpan: Span | undefined;
  readonly #runContext: Context | undefined;
  /** Steps started and not ended, outermost first: a node's step, and a step within it (the planner's `plan`). */
  readonly #steps: OpenStep[] = [];
  /** Subtasks between their start and end events. */
  readonly #working = new Set<string>();
  readonly #subtaskSpans = new Map<string, Span>();
  readonly #models = new Map<string, ModelRun>();

  constructor(options: RunObserverOptions) {
    super();
    this.#options = options;
    // Without spans to open in step with the work, the run's events reach the observer once stored
    // (the executor's onEvent), and the graph dispatches none to the callbacks (see `emit`).
    this.ignoreCustomEvent = options.tracer === undefined;
    if (options.tracer) {
      this.#runSpan = options.tracer.startSpan(
        "run",
        { attributes: { "troupe.task_id": options.taskId, "troupe.thread_id": options.threadId, "troupe.resumed": options.resumed } },
        options.parent,
      );
      this.#runContext = trace.setSpan(options.parent ?? ROOT_CONTEXT, this.#runSpan);
    }
  }

  /** The trace id of the run's spans, when tracing is on. */
  get traceId(): string | undefined {
    return this.#runSpan?.spanContext().traceId;
  }

  /** The run's events, as the graph emits them (`emit` hands each to the callback handlers too). */
  override handleCustomEvent(eventName: string, data: unknown): void {
    if (eventName === RUN_EVENT_CALLBACK) this.event(data as RunEvent);
  }

  /**
   * Follows the run's events: a step runs from its `step-start` to its `step-end`, a subtask from
   * its `subtask-start` to its `subtask-end` (its LangGraph task starts earlier and waits for its inputs).
   */
  event(event: RunEvent): void {
    switch (event.type) {
      case "step-start":
        this.#stepStart(event.step);
        break;
      case "step-end":
        this.#stepEnd(event.step, event.outcome === "failed" ? (event.error ?? "failed") : undefined);
        break;
      case "subtask-start":
        this.#working.add(event.subtaskId);
        this.#endSubtaskSpan(event.subtaskId);
        this.#subtaskSpan(event.subtaskId, { "troupe.agent": event.agent, "troupe.subtask.attempt": event.attempt });
        break;
      case "subtask-end":
        this.#working.delete(event.subtaskId);
        this.#endSubtaskSpan(event.subtaskId, event.status);
        break;
      case "subtask-skip":
        // Skipped before it started: a span of no length says so, where its work would have been.
        this.#working.delete(event.subtaskId);
        this.#endSubtaskSpan(event.subtaskId);
        this.#subtaskSpan(event.subtaskId);
        this.#endSubtaskSpan(event.subtaskId, "skipped");
        break;
      default:
        break;
    }
  }

  /** For a resumed run: the subtasks that had started and not ended before it paused (from its stored events). */
  resumeWith(running: readonly string[]): void {
    for (const id of running) this.#working.add(id);
  }

  /** The step a person would name: the subtasks running, or the step at work. */
  currentStep(): string | undefined {
    const subtasks = this.runningSubtasks();
    if (subtasks.length > 0) return `running ${subtasks.sort().join(", ")}`;
    const step = this.#steps[0]?.step;
    return step === undefined ? undefined : STEP_LABEL[step];
  }

  /** The ids of the subtasks running now (started, not yet ended). */
  runningSubtasks(): string[] {
    return [...this.#working];
  }

  #stepStart(step: RunStep): void {
    const entry: OpenStep = { step };
    if (this.#options.tracer && this.#runContext) {
      // A node's step hangs from the run; a step within it (the planner's call, `plan`) from that step.
      const within = this.#steps.at(-1)?.span;
      entry.span = this.#options.tracer.startSpan(
        this.#steps.length > 0 ? step : `node ${step}`,
        { attributes: { "troupe.node": step } },
        within ? trace.setSpan(this.#runContext, within) : this.#runContext,
      );
    }
    this.#steps.push(entry);
  }

  #stepEnd(step: RunStep, error: string | undefined): void {
    const index = this.#steps.findLastIndex((entry) => entry.step === step);
    if (index < 0) return;
    // A step ends after the steps within it; any still open (an end not reported) end with it.
    for (const entry of this.#steps.splice(index).reverse()) {
      if (error !== undefined && entry.step === step) entry.span?.setStatus({ code: SpanStatusCode.ERROR, message: error });
      entry.span?.end();
    }
  }

  /** The context of the innermost open step's span (where a call made outside any subtask belongs), else the run's. */
  #stepContext(outermost = false): Context | undefined {
    if (!this.#runContext) return undefined;
    const span = (outermost ? this.#steps[0] : this.#steps.at(-1))?.span;
    return span ? trace.setSpan(this.#runContext, span) : this.#runContext;
  }

  /**
   * A subtask's span: under the node's step that runs it (running the plan, or the planner while a
   * streamed plan runs). Opened on its start event, or at its first call when the run resumed while it ran.
   */
  #subtaskSpan(subtaskId: string, attributes: Record<string, string | number> = {}): Span | undefined {
    const open = this.#subtaskSpans.get(subtaskId);
    if (open) return open;
    const context = this.#stepContext(true);
    if (!this.#options.tracer || !context) return undefined;
    const span = this.#options.tracer.startSpan(`subtask ${subtaskId}`, { attributes: { "troupe.subtask_id": subtaskId, ...attributes } }, context);
    this.#subtaskSpans.set(subtaskId, span);
    return span;
  }

  #endSubtaskSpan(subtaskId: string, status?: string): void {
    const span = this.#subtaskSpans.get(subtaskId);
    if (!span) return;
    this.#subtaskSpans.delete(subtaskId);
    if (status !== undefined) span.setAttribute("troupe.subtask.status", status);
    span.end();
  }

  /** The span a call for this subtask (or for none) hangs from. */
  #callContext(subtaskId: string | undefined): Context | undefined {
    if (!this.#runContext) return undefined;
    const subtask = subtaskId !== undefined && (this.#subtaskSpans.has(subtaskId) || this.#working.has(subtaskId)) ? this.#subtaskSpan(subtaskId) : undefined;
    return subtask ? trace.setSpan(this.#runContext, subtask) : this.#stepContext();
  }

  override async handleChainStart(
    _chain: Serialized,
    _inputs: ChainValues,
    _runId: string,
    _fourth?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    seventh?: string,
    eighth?: string,
  ): Promise<void> {
    // @langchain/core 1.x declares (…, runType, tags, metadata, runName, parentRunId) but calls
    // with (…, parentRunId, tags, metadata, runType, runName); read either order. Only whether a
    // chain is a graph node's own run matters here, never which node.
    const runName = typeof eighth === "string" && !RUN_ID.test(eighth) ? eighth : seventh;
    const node = metadata?.langgraph_node;
    if (typeof node !== "string" || node !== runName) return;
    // Every node start waits for its turn of the event loop (this handler is awaited), so
    // many runs cannot starve the HTTP server between two of their steps.
    await this.#options.gate?.pass();
  }

  override handleChatModelStart(
    _llm: Serialized,
    _messages: BaseMessage[][],
    runId: string,
    _parentRunId?: string,
    _extraParams?: Record<string, unknown>,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ): void {
    // The call says who asks and which model it is (src/providers/call-metadata.ts).
    const call = readModelCallMetadata(metadata);
    const role: ModelRole | undefined = call?.role;
    const choice: ModelChoice = call ? { provider: call.provider, model: call.model } : { provider: "unknown", model: "unknown" };
    const entry: ModelRun = { choice };
    if (this.#options.tracer && this.#runContext) {
      // Under its subtask's span when it works for one, else under the step at work.
      entry.span = this.#options.tracer.startSpan(
        `chat ${choice.model}`,
        {
          attributes: {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": choice.provider,
            "gen_ai.request.model": choice.model,
            ...(role ? { "troupe.role": role } : {}),
            ...(call?.subtaskId ? { "troupe.subtask_id": call.subtaskId } : {}),
          },
        },
        this.#callContext(call?.subtaskId),
      );
    }
    this.#models.set(runId, entry);
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const entry = this.#models.get(runId);
    this.#models.delete(runId);
    if (!entry) return;
    this.#options.metrics.llmCalls.inc({ provider: entry.choice.provider, model: entry.choice.model, outcome: "ok" });
    if (entry.span) {
      const message = (output.generations[0]?.[0] as { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number } } } | undefined)?.message;
      const usage = message?.usage_metadata;
      if (usage?.input_tokens !== undefined) entry.span.setAttribute("gen_ai.usage.input_tokens", usage.input_tokens);
      if (usage?.output_tokens !== undefined) entry.span.setAttribute("gen_ai.usage.output_tokens", usage.output_tokens);
      entry.span.end();
    }
  }

  override handleLLMError(error: Error, runId: string): void {
    const entry = this.#models.get(runId);
    this.#models.delete(runId);
    if (!entry) return;
    this.#options.metrics.llmCalls.inc({ provider: entry.choice.provider, model: entry.choice.model, outcome: "error" });
    entry.span?.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
    entry.span?.end();
  }

  /** A tool call of this run, reported by the registry when it finished. */
  toolCall(report: ToolCallReport): void {
    if (!this.#options.tracer || !this.#runContext) return;
    const endTime = Date.now();
    const parent = this.#callContext(report.context.subtaskId) ?? this.#runContext;
    const span = this.#options.tracer.startSpan(
      `execute_tool ${report.tool}`,
      {
        startTime: endTime - report.durationMs,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": report.tool,
          "troupe.tool.outcome": report.outcome.ok ? "ok" : report.outcome.error.code,
          ...(report.context.subtaskId ? { "troupe.subtask_id": report.context.subtaskId } : {}),
          ...(report.context.agent ? { "troupe.agent": report.context.agent } : {}),
        },
      },
      parent,
    );
    if (!report.outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: report.outcome.error.message });
    span.end(endTime);
  }

  /** Ends the run's span (and any left open) with the drive's outcome. */
  finish(status: string, error?: string): void {
    for (const entry of this.#models.values()) entry.span?.end();
    for (const span of this.#subtaskSpans.values()) span.end();
    for (const entry of this.#steps.splice(0).reverse()) entry.span?.end();
    this.#models.clear();
    this.#subtaskSpans.clear();
    if (!this.#runSpan) return;
    this.#runSpan.setAttribute("troupe.status", status);
    if (error) this.#runSpan.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.#runSpan.end();
  }
}
