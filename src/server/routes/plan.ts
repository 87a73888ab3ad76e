import type { FastifyInstance } from "fastify";
import { planDepth } from "../../core/plan.js";
import { planTask } from "../../runtime/plan-task.js";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { PlanBody, PlanResult } from "../schemas.js";
import { renderExecutionGraph } from "../../core/execution-graph.js";
import { parseRequestPart } from "../validation.js";
import { estimatePlan } from "../../core/plan-estimates.js";

/** POST /plan: the plan only (subtasks with dependencies), nothing executed or stored. */
export function registerPlanRoutes(api: FastifyInstance, { troupe, docs, metrics }: RouteContext): void {
  docs.add({
    method: "post",
    path: "/api/v1/plan", operationId: "planTask", errors: ["unknown_tool", "model_call_failed", "model_refused", "context_overflow", "invalid_structured_output", "answer_cut_off", "planner_failed", "timeout"],
    summary: "Plan a task without running it",
    tags: ["tasks"],
    body: PlanBody,
    responses: { 200: { description: "the plan", schema: envelopeOf(PlanResult) } },
  });
  api.post("/plan", async (request, reply) => {
    const body = parseRequestPart(PlanBody, request.body);
    const controller = new AbortController();
    // Stop the model call when the client goes away.
    const onClose = (): void => {
      if (!reply.raw.writableFinished) controller.abort();
    };
    reply.raw.once("close", onClose);
    try {
      const result = await planTask(troupe, {
        task: body.task,
        context: body.context === undefined ? undefined : typeof body.context === "string" ? body.context : JSON.stringify(body.context),
        tools: body.tools,
        signal: controller.signal,
      });
      const choice = troupe.models.choice.planner;
      metrics.llmCalls.inc({ provider: choice.provider, model: choice.model, outcome: "ok" }, result.usage.llmCalls);
      metrics.llmTokens.inc({ kind: "prompt" }, result.usage.promptTokens);
      metrics.llmTokens.inc({ kind: "completion" }, result.usage.completionTokens);
      // Each step's time from what the same agent and tool took in earlier runs (seed 001 §2.2).
      const estimate = estimatePlan(result.subtasks, await troupe.store.stats.durations().catch(() => []));
      return ok({
        task: body.task,
        subtasks: result.subtasks,
        total_subtasks: result.subtasks.length,
        depth: planDepth(result.subtasks),
        question: result.question,
        answer: result.answer,
        notes: result.notes,
        graph: renderExecutionGraph(result.subtasks, {}),
        estimates: {
          steps: estimate.steps.map((step) => ({ subtask_id: step.id, estimated_ms: step.estimatedMs, basis: step.basis, samples: step.samples })),
          estimated_total_ms: estimate.totalMs,
          estimated_work_ms: estimate.workMs,
        },
      });
    } finally {
      reply.raw.off("close", onClose);
    }
  });
}
