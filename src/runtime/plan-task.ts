import { UsageMeter } from "../agents/model-call.js";
import { runPlanner } from "../agents/planner.js";
import { ModelError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import type { PlannedSubtask } from "../core/plan.js";
import { assertToolsKnown, checkPlan } from "../core/plan-check.js";
import { routeFor } from "../providers/registry.js";
import type { Troupe } from "./engine.js";

export interface PlanTaskRequest {
  task: string;
  context?: string;
  /** The tools the plan may use (all registered tools when absent). */
  tools?: string[];
  signal?: AbortSignal;
}

export interface PlanTaskResult {
  subtasks: PlannedSubtask[];
  /** Dependencies resource ordering added, one sentence each (as a run's `plan-ready` notes). */
  notes: string[];
  /** Set when the planner needs a person's answer before it can plan. */
  question: string | null;
  /** The plan's answer template, when it gave one that reads for its steps (src/core/answer-template.ts). */
  answer: string | null;
  usage: UsageMeter["usage"];
}

/**
 * Plans a task without running it: the planner model, the plan check a run applies
 * (`core/plan-check.ts`: validation, agent fit, tool availability, resource ordering), and the
 * same repairs (an invalid plan goes back with its errors), the same retries and fallbacks of the
 * model call. Nothing is stored. The plan returned is the one a run would start: with the
 * dependencies resource ordering adds.
 */
export async function planTask(troupe: Troupe, request: PlanTaskRequest): Promise<PlanTaskResult> {
  assertToolsKnown(request.tools, troupe.tools);
  const meter = new UsageMeter();
  const limits = { allowedTools: request.tools ?? null, maxSubtasks: LIMITS.maxSubtasks };
  let errors: string[] = [];
  for (let attempt = 0; attempt <= LIMITS.planRepairAttempts; attempt += 1) {
    const output = await runPlanner(
      {
        model: routeFor(troupe.models, "planner"),
        task: request.task,
        context: request.context,
        agents: troupe.agents.list(),
        tools: troupe.tools,
        feedback: [],
        errors,
        humanAnswers: [],
        maxSubtasks: LIMITS.maxSubtasks,
        allowedTools: request.tools,
      },
      { meter, signal: request.signal },
    );
    if (output.subtasks.length === 0 && output.question) return { subtasks: [], notes: [], question: output.question, answer: null, usage: meter.usage };
    const verdict = checkPlan(output.subtasks, troupe, limits, output.answer);
    if ("subtasks" in verdict) return { subtasks: verdict.subtasks, notes: verdict.notes, question: null, answer: verdict.answer ?? null, usage: meter.usage };
    errors = verdict.errors;
  }
  throw new ModelError("planner_failed", `the planner did not produce a valid plan: ${errors.join("; ")}`, { errors });
}
