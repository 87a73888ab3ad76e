import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { UsageMeter } from "../../agents/model-call.js";
import { runWorker, type WorkerOutcome, type WorkerToolCall } from "../../agents/worker.js";
import { errorMessage } from "../../core/errors.js";
import { LIMITS } from "../../core/limits.js";
import type { PlannedSubtask, SubtaskResult } from "../../core/plan.js";
import { resolveArgs } from "../../core/refs.js";
import type { ToolCallRecord } from "../../core/run.js";
import { preview, truncate } from "../../core/text.js";
import { emit, type GraphDeps, threadIdOf } from "../deps.js";
import { blockedSubtasks } from "../schedule.js";
import type { State, Update } from "../state.js";

/** What one `run_subtask` task receives through `Send`: everything it needs, nothing more. */
export interface SubtaskPayload {
  runId: string;
  task: string;
  subtask: PlannedSubtask;
  attempt: number;
  feedback: string[];
  maxSteps: number;
  /** The tools the run may use; null: all. */
  allowedTools?: string[] | null;
  dependencies: Array<{ id: string; label: string; summary: string; value: unknown }>;
}

function traceRecord(payload: SubtaskPayload, call: WorkerToolCall, at: number): ToolCallRecord {
  return {
    subtaskId: payload.subtask.id,
    agent: payload.subtask.agent,
    tool: call.tool,
    args: preview(call.args, 300),
    ok: call.outcome.ok,
    preview: call.outcome.ok ? truncate(call.outcome.summary, LIMITS.previewChars) : `${call.outcome.error.code}: ${call.outcome.error.message}`,
    durationMs: Math.round(call.durationMs),
    at,
  };
}

/** Runs one subtask: a direct tool step, or a worker's tool-calling loop. A failure is a result, not a crash. */
export function createRunSubtaskNode(deps: GraphDeps) {
  return async (payload: SubtaskPayload, config: LangGraphRunnableConfig): Promise<Update> => {
    const { subtask } = payload;
    const startedAt = Date.now();
    const meter = new UsageMeter();
    const records: ToolCallRecord[] = [];
    emit(config, { type: "subtask-start", subtaskId: subtask.id, label: subtask.label, agent: subtask.agent, attempt: payload.attempt });
    const onToolCall = (call: WorkerToolCall): void => {
      const record = traceRecord(payload, call, Date.now());
      records.push(record);
      emit(config, { type: "tool-call", subtaskId: subtask.id, agent: subtask.agent, tool: call.tool, ok: call.outcome.ok, durationMs: record.durationMs, preview: record.preview });
    };
    const toolContext = {
      workspace: deps.workspace,
      runId: payload.runId,
      threadId: threadIdOf(config),
      agent: subtask.agent,
      subtaskId: subtask.id,
      signal: config.signal,
    };
    let outcome: WorkerOutcome;
    const values = new Map(payload.dependencies.map((dependency) => [dependency.id, dependency.value]));
    try {
      const args = resolveArgs(subtask, (id) => values.get(id));
      const agent = deps.agents.get(subtask.agent);
      if (subtask.tool !== undefined && payload.allowedTools && !payload.allowedTools.includes(subtask.tool)) {
        outcome = { status: "failed", summary: "", error: `the tool ${subtask.tool} is not among the tools this run may use`, toolCalls: [], steps: 0 };
      } else if (subtask.tool !== undefined) {
        const started = performance.now();
        const result = await deps.tools.call(subtask.tool, args, toolContext);
        onToolCall({ tool: subtask.tool, args, outcome: result, durationMs: performance.now() - started });
        outcome = result.ok
          ? { status: "done", value: result.value, summary: truncate(result.summary, LIMITS.previewChars), toolCalls: [], steps: 0 }
          : { status: "failed", summary: "", error: `${result.error.code}: ${result.error.message}`, toolCalls: [], steps: 0 };
      } else if (!agent) {
        outcome = { status: "failed", summary: "", error: `unknown agent "${subtask.agent}"`, toolCalls: [], steps: 0 };
      } else {
        outcome = await runWorker(
          {
            agent,
            model: deps.models.worker,
            tools: deps.tools,
            task: payload.task,
            subtask,
            args,
            dependencies: payload.dependencies.map(({ id, label, summary }) => ({ id, label, summary })),
            feedback: payload.feedback,
            toolContext,
            maxSteps: payload.maxSteps,
            allowedTools: payload.allowedTools ?? undefined,
            onToolCall,
          },
          { meter, signal: config.signal },
        );
      }
    } catch (error) {
      if (config.signal?.aborted) throw error;
      outcome = { status: "failed", summary: "", error: errorMessage(error), toolCalls: [], steps: 0 };
    }
    const endedAt = Date.now();
    const result: SubtaskResult = {
      status: outcome.status,
      attempts: payload.attempt,
      value: outcome.value,
      summary: outcome.summary,
      startedAt,
      endedAt,
      llmCalls: meter.usage.llmCalls,
      toolCalls: records.length,
    };
    if (outcome.error !== undefined) result.error = outcome.error;
    emit(config, {
      type: "subtask-end",
      subtaskId: subtask.id,
      status: outcome.status,
      durationMs: endedAt - startedAt,
      summary: outcome.summary,
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    });
    return {
      results: { [subtask.id]: result },
      toolCalls: records,
      nodes: [`run_subtask:${subtask.id}`],
      metrics: { nodeVisits: 1, toolCalls: records.length, ...meter.usage },
    };
  };
}

/**
 * Where a wave's parallel tasks meet (once, however many there were). Subtasks that can no
 * longer run because a dependency failed are marked skipped, and the work is due for review.
 */
export function join(state: State): Update {
  return { results: blockedSubtasks(state.plan, state.results), needsReview: true, nodes: ["join"], metrics: { nodeVisits: 1 } };
}
