import { type LangGraphRunnableConfig, task } from "@langchain/langgraph";
import { ModelRefusalError, type ModelUsage, UsageMeter } from "../../agents/model-call.js";
import { runPlanner } from "../../agents/planner.js";
import { BudgetExhaustedError, type BudgetStop, isBudgetExhausted } from "../../core/budget.js";
import { errorMessage } from "../../core/errors.js";
import { LIMITS } from "../../core/limits.js";
import type { ModelIncident } from "../../core/model-incident.js";
import { isConfigurationGap, type PlannedSubtask, type PlanOutput } from "../../core/plan.js";
import { checkPlan as checkAgainst, type PlanLimits, type PlanVerdict, PrefixCheck } from "../../core/plan-check.js";
import type { ReviewMode } from "../../core/review-mode.js";
import { routeFor } from "../../providers/registry.js";
import { MAX_QUESTIONS } from "../coordinator.js";
import { announceBudgetStop, callOptions, createMeter, emit, type GraphDeps, ledgerOf } from "../deps.js";
import { EarlyStart } from "../execution/early-start.js";
import { routeOf } from "../route.js";
import type { State, Update } from "../state.js";
import { inStep } from "../steps.js";

/**
 * What the planner's call left: the plan, or why there is none — among them `broken`, a plan
 * stopped while it streamed by a check its start already failed, and an error that is the model's
 * refusal; with its usage, so a replay counts it.
 */
type PlanStep = ({ output: PlanOutput } | { error: string; refused?: true } | { budget: BudgetStop } | { broken: string[] }) & { usage: ModelUsage; incidents: ModelIncident[] };

/** The planner's input for this attempt. */
function plannerInput(deps: GraphDeps, state: State) {
  return {
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
    conversation: state.conversation,
    memories: state.recalled?.items ?? [],
  };
}

/**
 * Asks the planner model for a plan and validates it. An invalid plan goes back with its errors
 * on the next attempt; after the repairs allowed, or too many questions, the run stops failed.
 *
 * Without plan approval the plan also starts running while it streams in: each subtask the model
 * has finished writing, and that passes the checks a plan's start can fail, is offered to the
 * execution room's `EarlyStart`, which starts it as soon as its inputs exist (and drops what
 * started if the plan, judged whole when complete, is not valid). The planner's call is a
 * LangGraph task of its own, so a node that runs again (after a pause for an approval, or a
 * crash) gets the same plan back instead of a new one, and its subtasks their own saved results.
 *
 * The steps: write the plan (`writePlan`), judge what the call left (`judgePlan`), announce the
 * plan (`announcePlan`), and — when it streamed — run it to the end (`EarlyStart.runPlan`).
 */
export function createPlannerNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = createMeter(config);
    const attempt = state.planAttempts + 1;
    const visit = plannerVisit(config, attempt, meter);
    const streaming = !state.settings.approvePlan;
    const early = new EarlyStart(deps, state, config);
    const step = await writePlan(deps, state, config, meter, early, streaming);
    const judged = judgePlan(deps, state, config, step, visit);
    if ("drop" in judged) {
      await early.drop(judged.drop);
      return judged.update();
    }
    const planned = announcePlan(config, state, attempt, judged.plan);
    if (!streaming) return visit.update(planned);
    return visit.update({ ...planned, ...(await early.runPlan(judged.plan.subtasks)) });
  };
}

/** How this planner visit writes its update: counted, with its model usage and incidents, and how an invalid plan ends it. */
interface PlannerVisit {
  update(update: Update): Update;
  invalid(errors: string[]): Update;
}

function plannerVisit(config: LangGraphRunnableConfig, attempt: number, meter: UsageMeter): PlannerVisit {
  const update = (part: Update): Update => ({
    ...part,
    planAttempts: attempt,
    nodes: ["planner", ...((part.nodes as string[] | undefined) ?? [])],
    modelIncidents: [...meter.incidents, ...((part.modelIncidents as ModelIncident[] | undefined) ?? [])],
    metrics: addUsage({ nodeVisits: 1, ...meter.usage }, part.metrics as Record<string, number> | undefined),
  });
  const invalid = (errors: string[]): Update => {
    emit(config, { type: "plan-invalid", attempt, errors });
    // No plan can mend a tool no agent may use: the run stops at once, saying which setting to change.
    const gaps = errors.filter(isConfigurationGap);
    if (gaps.length > 0) return update({ planStatus: "invalid", planErrors: errors, stopReason: "failed", failure: `the configuration stops this task: ${gaps.join("; ")}` });
    if (attempt > LIMITS.planRepairAttempts) {
      return update({
        planStatus: "invalid",
        planErrors: errors,
        stopReason: "failed",
        failure: `the planner did not produce a valid plan in ${attempt} attempts: ${errors.join("; ")}`,
      });
    }
    return update({ planStatus: "invalid", planErrors: errors });
  };
  return { update, invalid };
}

/**
 * The planner's call, as the LangGraph task "plan" (a replay hands back the saved step), with each
 * subtask offered to `early` as it streams in when `streaming`; then its usage counted.
 */
async function writePlan(deps: GraphDeps, state: State, config: LangGraphRunnableConfig, meter: UsageMeter, early: EarlyStart, streaming: boolean): Promise<PlanStep> {
  let ran = false;
  const step = await task("plan", async (): Promise<PlanStep> =>
    inStep(config, "plan", async () => {
      ran = true;
      return callPlanner(deps, state, config, meter, early, streaming);
    }),
  )();
  await early.settled();
  meter.add(step.usage);
  if (!ran) {
    // Made before the node ran again: the run's metrics and budget have not counted it yet.
    meter.incidents.push(...step.incidents);
    ledgerOf(config)?.carry(step.usage);
  }
  return step;
}

/** Calls the planner's model; what it leaves (a plan, or why there is none) is the step's value. */
async function callPlanner(deps: GraphDeps, state: State, config: LangGraphRunnableConfig, meter: UsageMeter, early: EarlyStart, streaming: boolean): Promise<PlanStep> {
  // Its own meter, so the usage is kept with the step; retries and fallbacks are still told as they happen.
  const stepMeter = new UsageMeter((incident) => meter.note(incident));
  const kept = (): Pick<PlanStep, "usage" | "incidents"> => ({ usage: stepMeter.usage, incidents: stepMeter.incidents });
  // Every check a streaming plan's start can already fail is made as each subtask arrives: the
  // first one past a limit stops the model's stream, and nothing after it is handed over.
  const prefix = new PrefixCheck(deps, planLimits(state, config));
  const stream = new AbortController();
  const onSubtask = (subtask: PlannedSubtask): void => {
    if (!prefix.accept(subtask)) {
      stream.abort(new Error("the plan broke a limit while it streamed"));
      early.close();
      return;
    }
    early.offer(subtask);
  };
  const signal = config.signal ? AbortSignal.any([config.signal, stream.signal]) : stream.signal;
  try {
    const output = await runPlanner(plannerInput(deps, state), callOptions(deps, state.runId, { ...config, signal }, stepMeter), streaming ? onSubtask : undefined);
    if (prefix.problems) return { broken: prefix.problems, ...kept() };
    return { output, ...kept() };
  } catch (error) {
    if (config.signal?.aborted) throw error;
    if (prefix.problems) return { broken: prefix.problems, ...kept() };
    if (isBudgetExhausted(error)) return { budget: error.stop, ...kept() };
    return { error: errorMessage(error), ...(error instanceof ModelRefusalError ? { refused: true as const } : {}), ...kept() };
  } finally {
    early.close();
  }
}

/** A plan judged valid as a whole. */
type ValidPlan = Extract<PlanVerdict, { subtasks: PlannedSubtask[] }>;

/** What the planner's step comes to: a valid plan, or no plan — then what started early is dropped (for the reason given) before the update is made. */
type Judgement = { plan: ValidPlan } | { drop: string; update: () => Update };

function judgePlan(deps: GraphDeps, state: State, config: LangGraphRunnableConfig, step: PlanStep, visit: PlannerVisit): Judgement {
  if ("budget" in step) {
    return {
      drop: "the budget ran out while planning",
      update: () => {
        announceBudgetStop(deps, state.runId, config, new BudgetExhaustedError(step.budget));
        return visit.update({ stopReason: "budget_exhausted", budgetStop: step.budget });
      },
    };
  }
  if ("error" in step) {
    // A refusal is the model's answer: asking again would only ask it to change its mind.
    if (step.refused) return { drop: "the planner failed", update: () => visit.update({ planStatus: "invalid", planErrors: [step.error], stopReason: "failed", failure: `the planner's model refused the task: ${step.error}` }) };
    return { drop: "the planner failed", update: () => visit.invalid([`the planner failed: ${step.error}`]) };
  }
  if ("broken" in step) return { drop: "the plan broke a limit while it streamed", update: () => visit.invalid(step.broken) };
  const { output } = step;
  if (output.subtasks.length === 0 && output.question) {
    const question = output.question;
    return {
      drop: "the planner asked a question",
      update: () => {
        if (state.humanAnswers.length >= MAX_QUESTIONS) return visit.update({ stopReason: "failed", failure: `the planner still had questions after ${MAX_QUESTIONS} answers` });
        return visit.update({ planStatus: "question", question, planErrors: [] });
      },
    };
  }
  const checked = checkPlan(output.subtasks, deps, state, config, output.answer);
  if ("errors" in checked) return { drop: "the plan is not valid", update: () => visit.invalid(checked.errors) };
  return { plan: checked };
}

/** Tells the valid plan (and the route it takes); its part of the node's update. */
function announcePlan(config: LangGraphRunnableConfig, state: State, attempt: number, plan: ValidPlan): Update {
  emit(config, { type: "plan-ready", attempt, subtasks: plan.subtasks, ...(plan.notes.length > 0 ? { notes: plan.notes } : {}), ...(plan.answer !== undefined ? { answer: plan.answer } : {}) });
  announceRoute(config, plan.subtasks, state.settings.review, plan.answer);
  return {
    planStatus: state.settings.approvePlan ? "ready" : "approved",
    plan: plan.subtasks,
    planNotes: plan.notes,
    planAnswer: plan.answer ?? null,
    planErrors: [],
    question: null,
  };
}

/** Says which route the plan takes, and why. */
export function announceRoute(config: LangGraphRunnableConfig, plan: readonly PlannedSubtask[], mode: ReviewMode | undefined, answer: string | undefined): void {
  const route = routeOf(plan, mode, answer);
  if (route) emit(config, { type: "route-decide", ...route });
}

/** Usage summed into metrics. */
function addUsage(metrics: Record<string, number>, more: Record<string, number> | undefined): Record<string, number> {
  const sum = { ...metrics };
  for (const [key, value] of Object.entries(more ?? {})) sum[key] = (sum[key] ?? 0) + value;
  return sum;
}

/** A plan judged by the one plan check (`core/plan-check.ts`) against this run's agents, tools and limits. */
export function checkPlan(subtasks: PlannedSubtask[], deps: GraphDeps, state: Pick<State, "settings" | "metrics">, config?: LangGraphRunnableConfig, answer?: string): PlanVerdict {
  return checkAgainst(subtasks, deps, planLimits(state, config), answer);
}

/**
 * What this run allows a plan: its tools, its size bound, and the model calls the budget leaves
 * its workers — from the state (what the run had used when this planner attempt began, and its
 * own call), so a node run again judges the same plan the same way.
 */
function planLimits(state: Pick<State, "settings" | "metrics">, config: LangGraphRunnableConfig | undefined): PlanLimits {
  const maxModelCalls = ledgerOf(config)?.budget.maxModelCalls;
  return {
    allowedTools: state.settings.allowedTools ?? null,
    maxSubtasks: state.settings.maxSubtasks,
    ...(maxModelCalls !== undefined ? { modelCallsLeft: maxModelCalls - (state.metrics?.llmCalls ?? 0) - 1 } : {}),
  };
}

