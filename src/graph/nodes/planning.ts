import { interrupt, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { LIMITS } from "../../core/limits.js";
import { runPlanner } from "../../agents/planner.js";
import { isBudgetExhausted } from "../../core/budget.js";
import { errorMessage } from "../../core/errors.js";
import { routeFor } from "../../providers/registry.js";
import { PlannedSubtask, validatePlan } from "../../core/plan.js";
import { describeAdded, orderByResources } from "../../core/resources.js";
import { ResumeDecision, type InterruptInfo } from "../../core/run.js";
import { z } from "zod";
import { MAX_QUESTIONS } from "../coordinator.js";
import { announceBudgetStop, callOptions, createMeter, emit, type GraphDeps, planView } from "../deps.js";
import type { State, Update } from "../state.js";

/**
 * Asks the planner model for a plan and validates it. An invalid plan goes back with its errors
 * on the next attempt; after the repairs allowed, or too many questions, the run stops failed.
 */
export function createPlannerNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = createMeter(config);
    const attempt = state.planAttempts + 1;
    const base = (update: Update): Update => ({
      ...update,
      planAttempts: attempt,
      nodes: ["planner"],
      modelIncidents: meter.incidents,
      metrics: { nodeVisits: 1, ...meter.usage },
    });
    const invalid = (errors: string[]): Update => {
      emit(config, { type: "plan-invalid", attempt, errors });
      if (attempt > LIMITS.planRepairAttempts) {
        return base({
          planStatus: "invalid",
          planErrors: errors,
          stopReason: "failed",
          failure: `the planner did not produce a valid plan in ${attempt} attempts: ${errors.join("; ")}`,
        });
      }
      return base({ planStatus: "invalid", planErrors: errors });
    };
    let output;
    try {
      output = await runPlanner(
        {
          model: routeFor(deps.models, "planner"),
          task: state.task,
          context: state.context ?? undefined,
          agents: deps.agents.list(),
          tools: deps.tools,
          feedback: state.planFeedback,
          errors: state.planErrors,
          humanAnswers: state.humanAnswers,
          maxSubtasks: state.settings.maxSubtasks,
          promptBudget: state.settings.promptBudget,
          allowedTools: state.settings.allowedTools ?? undefined,
        },
        callOptions(deps, state.runId, config, meter),
      );
    } catch (error) {
      if (config.signal?.aborted) throw error;
      if (isBudgetExhausted(error)) {
        announceBudgetStop(deps, state.runId, config, error);
        return base({ stopReason: "budget_exhausted", budgetStop: error.stop });
      }
      return invalid([`the planner failed: ${errorMessage(error)}`]);
    }
    if (output.subtasks.length === 0 && output.question) {
      if (state.humanAnswers.length >= MAX_QUESTIONS) {
        return base({ stopReason: "failed", failure: `the planner still had questions after ${MAX_QUESTIONS} answers` });
      }
      return base({ planStatus: "question", question: output.question, planErrors: [] });
    }
    const checked = checkPlan(output.subtasks, deps, state);
    if ("errors" in checked) return invalid(checked.errors);
    emit(config, { type: "plan-ready", attempt, subtasks: checked.subtasks, ...(checked.notes.length > 0 ? { notes: checked.notes } : {}) });
    return base({ planStatus: state.settings.approvePlan ? "ready" : "approved", plan: checked.subtasks, planNotes: checked.notes, planErrors: [], question: null });
  };
}

/**
 * A plan as it will run, or every reason it cannot: valid (`validatePlan`), then ordered by the
 * workspace paths its subtasks read and write — a missing read-after-write or write-after-write
 * dependency is added (and noted), an unclear one is an error for the planner to settle.
 */
export function checkPlan(subtasks: PlannedSubtask[], deps: GraphDeps, state: Pick<State, "settings">): { subtasks: PlannedSubtask[]; notes: string[] } | { errors: string[] } {
  const errors = validatePlan(subtasks, { agents: deps.agents.names(), tools: state.settings.allowedTools ?? deps.tools.names(), maxSubtasks: state.settings.maxSubtasks });
  if (errors.length > 0) return { errors };
  const ordered = orderByResources(subtasks, (tool, args) => deps.tools.resources(tool, args));
  if (ordered.errors.length > 0) return { errors: ordered.errors };
  return { subtasks: ordered.subtasks, notes: describeAdded(ordered.added) };
}

/** Interrupts the run; the engine reports the request and validates the person's decision on resume. */
function ask(info: InterruptInfo): ResumeDecision {
  const parsed = ResumeDecision.safeParse(interrupt(info));
  return parsed.success ? parsed.data : { decision: "reject", feedback: "the resume value was not a valid decision" };
}

/** Pauses for a person to approve, reject (with feedback: re-plan) or edit the plan. */
export function createApprovePlanNode(deps: GraphDeps) {
  return (state: State, config: LangGraphRunnableConfig): Update => {
    const decision = ask({ kind: "plan-approval", payload: { plan: planView(state) } });
    const visit: Update = { nodes: ["approve_plan"], metrics: { nodeVisits: 1 } };
    switch (decision.decision) {
      case "approve":
      case "continue":
        return { ...visit, planStatus: "approved" };
      case "edit": {
        const edited = z.array(PlannedSubtask).safeParse(decision.plan ?? []);
        const checked = edited.success ? checkPlan(edited.data, deps, state) : { errors: [z.prettifyError(edited.error)] };
        if ("subtasks" in checked) {
          emit(config, { type: "plan-ready", attempt: state.planAttempts, subtasks: checked.subtasks, ...(checked.notes.length > 0 ? { notes: checked.notes } : {}) });
          return { ...visit, plan: checked.subtasks, planNotes: checked.notes, planStatus: "approved" };
        }
        return replan(state, visit, [`The person's edited plan was invalid: ${checked.errors.join("; ")}`]);
      }
      case "answer":
        return replan(state, visit, [decision.answer]);
      case "reject":
        if (!decision.feedback) return { ...visit, stopReason: "rejected" };
        return replan(state, visit, [decision.feedback]);
    }
  };
}

function replan(state: State, visit: Update, feedback: string[]): Update {
  if (state.rejections + 1 > state.settings.maxIterations) return { ...visit, stopReason: "rejected" };
  return { ...visit, planStatus: "none", planAttempts: 0, planErrors: [], planFeedback: feedback, rejections: state.rejections + 1 };
}

/** Pauses to put the planner's question to a person; the answer goes back to the planner. */
export function createAskHumanNode() {
  return (state: State): Update => {
    const decision = ask({ kind: "question", payload: { question: state.question ?? "" } });
    const visit: Update = { nodes: ["ask_human"], metrics: { nodeVisits: 1 } };
    const answer =
      decision.decision === "answer"
        ? decision.answer
        : decision.decision === "edit" && decision.answer
          ? decision.answer
          : decision.decision === "reject"
            ? undefined
            : "(no answer; proceed with your best judgement)";
    if (answer === undefined) return { ...visit, stopReason: "rejected" };
    return { ...visit, humanAnswers: [`${state.question ?? ""} → ${answer}`], planStatus: "none", planAttempts: 0, question: null };
  };
}
