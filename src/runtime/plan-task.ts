import { UsageMeter } from "../agents/model-call.js";
import { runPlanner } from "../agents/planner.js";
import { InputError, ModelError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import { type PlannedSubtask, validatePlan } from "../core/plan.js";
import { agentProfiles, fileTools } from "../graph/dispatch.js";
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
  /** Set when the planner needs a person's answer before it can plan. */
  question: string | null;
  usage: UsageMeter["usage"];
}

/**
 * Plans a task without running it: the planner model, the same validation a run applies, and
 * the same repairs (an invalid plan goes back with its errors), the same retries and fallbacks
 * of the model call. Nothing is stored.
 */
export async function planTask(troupe: Troupe, request: PlanTaskRequest): Promise<PlanTaskResult> {
  const unknown = (request.tools ?? []).filter((name) => !troupe.tools.has(name));
  if (unknown.length > 0) {
    throw new InputError("unknown_tool", `unknown tool${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}; available: ${troupe.tools.names().join(", ")}`, { tools: unknown });
  }
  const meter = new UsageMeter();
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
    if (output.subtasks.length === 0 && output.question) return { subtasks: [], question: output.question, usage: meter.usage };
    const deps = { tools: troupe.tools, agents: troupe.agents };
    errors = validatePlan(output.subtasks, {
      agents: troupe.agents.names(),
      tools: request.tools ?? troupe.tools.names(),
      maxSubtasks: LIMITS.maxSubtasks,
      profiles: agentProfiles(deps, request.tools),
      files: fileTools(deps),
    });
    if (errors.length === 0) return { subtasks: output.subtasks, question: null, usage: meter.usage };
  }
  throw new ModelError("planner_failed", `the planner did not produce a valid plan: ${errors.join("; ")}`, { errors });
}
