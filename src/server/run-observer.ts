import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { Serialized } from "@langchain/core/load/serializable";
import type { BaseMessage } from "@langchain/core/messages";
import type { LLMResult } from "@langchain/core/outputs";
import type { ChainValues } from "@langchain/core/utils/types";
import { type Context, ROOT_CONTEXT, type Span, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import { errorMessage } from "../core/errors.js";
import type { RunEvent } from "../core/events.js";
import { subtaskIdOfTask } from "../graph/dispatch.js";
import { readModelCallMetadata } from "../providers/call-metadata.js";
import type { ModelRole } from "../providers/provider.js";
import type { ModelChoice } from "../providers/registry.js";
import type { ToolCallReport } from "../tools/registry.js";
import type { ServerMetrics } from "./metrics.js";
import type { TurnGate } from "./turn-gate.js";

const RUN_ID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;

/** What a person reads as the current step while a node runs. */
const STEP_OF_NODE: Record<string, string> = {
  intake: "starting",
  planner: "planning",
  approve_plan: "waiting for plan approval",
  ask_human: "waiting for an answer",
  execute: "running the plan",
  critic: "reviewing",
  synthesizer: "answering",
  approve_answer: "waiting for answer approval",
  finalize: "finishing",
};

interface NodeRun {
  node: string;
  subtaskId?: string;
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
 * Watches one drive of a run through LangChain callbacks: it knows which nodes are running (the
 * current step), counts model calls for Prometheus, and — when tracing is on — makes the spans
 * run → node → model call / tool call.
 */
export class RunObserver extends BaseCallbackHandler {
  name = "troupe-run-observer";
  override awaitHandlers = true;
  readonly #options: RunObserverOptions;
  readonly #runSpan: Span | undefined;
  readonly #runContext: Context | undefined;
  readonly #parents = new Map<string, string | undefined>();
  readonly #nodes = new Map<string, NodeRun>();
  /** Subtasks between their start and end events. */
  readonly #working = new Set<string>();
  /** The span of the node running subtasks (execute, or the planner running a streamed plan): its subtasks' spans hang from it. */
  #executeSpan: Span | undefined;
  #plannerSpan: Span | undefined;
  readonly #models = new Map<string, ModelRun>();
  readonly #subtaskSpans = new Map<string, Span>();
  readonly #running = new Map<string, number>();

  constructor(options: RunObserverOptions) {
    super();
    this.#options = options;
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

  /**
   * Follows the run's events: a subtask runs from its `subtask-start` to its `subtask-end` (its
   * LangGraph task starts earlier, when the plan is dispatched, and waits for its inputs).
   */
  event(event: RunEvent): void {
    if (event.type === "subtask-start") this.#working.add(event.subtaskId);
    else if (event.type === "subtask-end" || event.type === "subtask-skip") this.#working.delete(event.subtaskId);
  }

  /** For a resumed run: the subtasks that had started and not ended before it paused (from its stored events). */
  resumeWith(running: readonly string[]): void {
    for (const id of running) this.#working.add(id);
  }

  /** The step a person would name: the subtasks running, or the node at work. */
  currentStep(): string | undefined {
    const subtasks = this.runningSubtasks();
    if (subtasks.length > 0) return `running ${subtasks.sort().join(", ")}`;
    const nodes = [...this.#running.keys()].filter((node) => subtaskIdOfTask(node) === undefined);
    return nodes.length > 0 ? (STEP_OF_NODE[nodes[0] as string] ?? nodes[0]) : undefined;
  }

  /** The ids of the subtasks running now (started, not yet ended). */
  runningSubtasks(): string[] {
    return [...this.#working];
  }

  override async handleChainStart(
    _chain: Serialized,
    inputs: ChainValues,
    runId: string,
    fourth?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    seventh?: string,
    eighth?: string,
  ): Promise<void> {
    // @langchain/core 1.x declares (…, runType, tags, metadata, runName, parentRunId) but calls
    // with (…, parentRunId, tags, metadata, runType, runName); read either order.
    const isId = (value: unknown): value is string => typeof value === "string" && RUN_ID.test(value);
    const parentRunId = isId(fourth) ? fourth : isId(eighth) ? eighth : undefined;
    const runName = typeof eighth === "string" && !isId(eighth) ? eighth : seventh;
    this.#parents.set(runId, parentRunId);
    const node = metadata?.langgraph_node;
    if (typeof node !== "string" || node !== runName) return;
    const subtask = subtaskIdOfTask(node);
    const entry: NodeRun = { node, ...(typeof subtask === "string" ? { subtaskId: subtask } : {}) };
    if (this.#options.tracer && this.#runContext) {
      // A subtask's task is a span of its own under the node that runs it (execute, or the planner
      // running a streamed plan), the planner's call (task `plan`) under the planner; nodes hang from the run.
      const parent = entry.subtaskId ? this.#executeSpan : node === "plan" ? this.#plannerSpan : undefined;
      entry.span = this.#options.tracer.startSpan(
        entry.subtaskId ? `subtask ${entry.subtaskId}` : node === "plan" ? "plan" : `node ${node}`,
        { attributes: { "troupe.node": node, ...(entry.subtaskId ? { "troupe.subtask_id": entry.subtaskId } : {}) } },
        parent ? trace.setSpan(this.#runContext, parent) : this.#runContext,
      );
      if (entry.subtaskId) this.#subtaskSpans.set(entry.subtaskId, entry.span);
      // The node that runs subtasks: execute, or the planner while a streamed plan runs.
      if (node === "execute" || node === "planner") this.#executeSpan = entry.span;
      if (node === "planner") this.#plannerSpan = entry.span;
    }
    this.#nodes.set(runId, entry);
    this.#running.set(node, (this.#running.get(node) ?? 0) + 1);
    // Every node start waits for its turn of the event loop (this handler is awaited), so
    // many runs cannot starve the HTTP server between two of their steps.
    await this.#options.gate?.pass();
  }

  override handleChainEnd(_outputs: ChainValues, runId: string): void {
    this.#endChain(runId);
  }

  override handleChainError(error: Error, runId: string): void {
    this.#endChain(runId, error);
  }

  #endChain(runId: string, error?: Error): void {
    this.#parents.delete(runId);
    const entry = this.#nodes.get(runId);
    if (!entry) return;
    this.#nodes.delete(runId);
    const left = (this.#running.get(entry.node) ?? 1) - 1;
    if (left > 0) this.#running.set(entry.node, left);
    else this.#running.delete(entry.node);
    if (entry.subtaskId) this.#subtaskSpans.delete(entry.subtaskId);
    // An interrupt is how a node pauses for a person, not a failure.
    if (error && error.name !== "GraphInterrupt" && error.name !== "GraphBubbleUp") {
      entry.span?.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
    }
    entry.span?.end();
  }

  /** The node a callback run belongs to, walking up its parents. */
  #nodeOf(runId: string | undefined): NodeRun | undefined {
    let current = runId;
    for (let depth = 0; current !== undefined && depth < 50; depth += 1) {
      const node = this.#nodes.get(current);
      if (node) return node;
      current = this.#parents.get(current);
    }
    return undefined;
  }

  override handleChatModelStart(
    _llm: Serialized,
    _messages: BaseMessage[][],
    runId: string,
    parentRunId?: string,
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
      // Under its subtask's span when it works for one, else under the node that runs it.
      const parentSpan = (call?.subtaskId ? this.#subtaskSpans.get(call.subtaskId) : undefined) ?? this.#nodeOf(parentRunId)?.span;
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
        parentSpan ? trace.setSpan(this.#runContext, parentSpan) : this.#runContext,
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
    const node = report.context.subtaskId ? this.#subtaskSpans.get(report.context.subtaskId) : undefined;
    const parent = node ? trace.setSpan(this.#runContext, node) : this.#runContext;
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
    for (const entry of this.#nodes.values()) entry.span?.end();
    for (const entry of this.#models.values()) entry.span?.end();
    this.#nodes.clear();
    this.#models.clear();
    this.#running.clear();
    if (!this.#runSpan) return;
    this.#runSpan.setAttribute("troupe.status", status);
    if (error) this.#runSpan.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.#runSpan.end();
  }
}
