import { interrupt, type LangGraphRunnableConfig, task } from "@langchain/langgraph";
import { ModelRefusalError, type ModelUsage, UsageMeter } from "../../agents/model-call.js";
import { runPlanner } from "../../agents/planner.js";
import { BudgetExhaustedError, type BudgetStop, isBudgetExhausted } from "../../core/budget.js";
import { LIMITS } from "../../core/limits.js";
import type { ModelIncident } from "../../core/model-incident.js";
import { stableStringify } from "../../core/text.js";
import { errorMessage } from "../../core/errors.js";
import { routeFor } from "../../providers/registry.js";
import { isConfigurationGap, PlannedSubtask, type PlanOutput } from "../../core/plan.js";
import { checkPlan as checkAgainst, orderStreamed, type PlanLimits, type PlanVerdict, PrefixCheck } from "../../core/plan-check.js";
import { ResumeDecision, type InterruptInfo } from "../../core/run.js";
import { z } from "zod";
import { MAX_QUESTIONS } from "../coordinator.js";
import { announceBudgetStop, callOptions, createMeter, emit, type GraphDeps, ledgerOf, planView } from "../deps.js";
import { Dispatcher, executed } from "../dispatch.js";
import type { State, Update } from "../state.js";
import type { ReviewMode } from "../../core/review-mode.js";
import { routeOf } from "../route.js";
import { inStep } from "../steps.js";

/**
 * What the planner's call left: the plan, or why there is none — among them `broken`, a plan
 * stopped while it streamed by a check its start already failed, and an error that is the model's
 * refusal; with its usage, so a replay counts it.
 */
type PlanStep = ({ output: PlanOutput } | { error: string; refused?: true } | { budget: BudgetStop } | { broken: string[] }) & { usage: ModelUsage; incidents: ModelIncident[] };

/** Subtasks handed over one at a time by a producer, read by a consumer with `for await`. */
class SubtaskQueue implements AsyncIterable<PlannedSubtask> {
  readonly #items: PlannedSubtask[] = [];
  #closed = false;
  #wake: (() => void) | undefined;

  push(item: PlannedSubtask): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<PlannedSubtask> {
    for (;;) {
      const item = this.#items.shift();
      if (item) yield item;
      else if (this.#closed) return;
      else await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

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
 * Without plan approval the plan also starts running while it streams in (LLMCompiler's
 * task-fetching unit): each subtask the model has finished writing, and that reads as valid on
 * its own, is handed to a Dispatcher at once and starts as soon as its inputs exist. The plan is
 * still validated as a whole when complete; if it is not valid, what started is aborted and its
 * results dropped. The planner's call is a LangGraph task of its own, so a node that runs again
 * (after a pause for an approval, or a crash) gets the same plan back instead of a new one, and
 * its subtasks their own saved results.
 */
export function createPlannerNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = createMeter(config);
    const attempt = state.planAttempts + 1;
    const base = (update: Update): Update => ({
      ...update,
      planAttempts: attempt,
      nodes: ["planner", ...((update.nodes as string[] | undefined) ?? [])],
      modelIncidents: [...meter.incidents, ...((update.modelIncidents as ModelIncident[] | undefined) ?? [])],
      metrics: addUsage({ nodeVisits: 1, ...meter.usage }, update.metrics as Record<string, number> | undefined),
    });
    const invalid = (errors: string[]): Update => {
      emit(config, { type: "plan-invalid", attempt, errors });
      // No plan can mend a tool no agent may use: the run stops at once, saying which setting to change.
      const gaps = errors.filter(isConfigurationGap);
      if (gaps.length > 0) return base({ planStatus: "invalid", planErrors: errors, stopReason: "failed", failure: `the configuration stops this task: ${gaps.join("; ")}` });
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
    const streaming = !state.settings.approvePlan;
    const queue = new SubtaskQueue();
    let ran = false;
    const planning = task("plan", async (): Promise<PlanStep> =>
      inStep(config, "plan", async () => {
        ran = true;
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
            queue.close();
            return;
          }
          queue.push(subtask);
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
          queue.close();
        }
      }),
    )();
    // Subtasks start as they stream in; the consumer runs in this node (not in the planner's task), so their tasks are this node's.
    const arrived: PlannedSubtask[] = [];
    let dispatcher = new Dispatcher(deps, { state, plan: () => arrived }, config, { speculative: true });
    const consuming = (async () => {
      let accepting = streaming;
      for await (const subtask of queue) {
        if (!accepting) continue;
        const next = orderStreamed(arrived, subtask, deps);
        if (!next) {
          accepting = false;
          continue;
        }
        arrived.push(next);
        emit(config, { type: "subtask-planned", subtask: next });
        dispatcher.add(next);
      }
    })();
    const step = await planning;
    queue.close();
    await consuming;
    meter.add(step.usage);
    if (!ran) {
      // Made before the node ran again: the run's metrics and budget have not counted it yet.
      meter.incidents.push(...step.incidents);
      ledgerOf(config)?.carry(step.usage);
    }
    const drop = async (reason: string): Promise<void> => {
      dispatcher.abort(reason);
      await dispatcher.finish();
    };
    if ("budget" in step) {
      await drop("the budget ran out while planning");
      const error = new BudgetExhaustedError(step.budget);
      announceBudgetStop(deps, state.runId, config, error);
      return base({ stopReason: "budget_exhausted", budgetStop: step.budget });
    }
    if ("error" in step) {
      await drop("the planner failed");
      // A refusal is the model's answer: asking again would only ask it to change its mind.
      if (step.refused) return base({ planStatus: "invalid", planErrors: [step.error], stopReason: "failed", failure: `the planner's model refused the task: ${step.error}` });
      return invalid([`the planner failed: ${step.error}`]);
    }
    if ("broken" in step) {
      await drop("the plan broke a limit while it streamed");
      return invalid(step.broken);
    }
    const { output } = step;
    if (output.subtasks.length === 0 && output.question) {
      await drop("the planner asked a question");
      if (state.humanAnswers.length >= MAX_QUESTIONS) {
        return base({ stopReason: "failed", failure: `the planner still had questions after ${MAX_QUESTIONS} answers` });
      }
      return base({ planStatus: "question", question: output.question, planErrors: [] });
    }
    const checked = checkPlan(output.subtasks, deps, state, config, output.answer);
    if ("errors" in checked) {
      await drop("the plan is not valid");
      return invalid(checked.errors);
    }
    emit(config, { type: "plan-ready", attempt, subtasks: checked.subtasks, ...(checked.notes.length > 0 ? { notes: checked.notes } : {}), ...(checked.answer !== undefined ? { answer: checked.answer } : {}) });
    announceRoute(config, checked.subtasks, state.settings.review, checked.answer);
    const planned: Update = {
      planStatus: state.settings.approvePlan ? "ready" : "approved",
      plan: checked.subtasks,
      planNotes: checked.notes,
      planAnswer: checked.answer ?? null,
      planErrors: [],
      question: null,
    };
    if (!streaming) return base(planned);
    // What started early must be the start of the plan as judged whole; if a retried call wrote another plan, start over.
    if (arrived.some((subtask, index) => stableStringify(subtask) !== stableStringify(checked.subtasks[index]))) {
      await drop("the plan changed while it streamed");
      arrived.length = 0;
      dispatcher = new Dispatcher(deps, { state, plan: () => checked.subtasks }, config);
    }
    // The whole plan before it is confirmed: a worker learns then whether its subtask is the plan's only one (graph/route.ts).
    const started = arrived.length;
    arrived.splice(0, arrived.length, ...checked.subtasks);
    dispatcher.confirm();
    for (const subtask of checked.subtasks.slice(started)) dispatcher.add(subtask);
    return base({ ...planned, ...executed(await dispatcher.finish()) });
  };
}

/** Says which route the plan takes, and why. */
function announceRoute(config: LangGraphRunnableConfig, plan: readonly PlannedSubtask[], mode: ReviewMode | undefined, answer: string | undefined): void {
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

/** Interrupts the run; the engine reports the request and validates the person's decision on resume. */
function ask(info: InterruptInfo): ResumeDecision {
  const parsed = ResumeDecision.safeParse(interrupt(info));
  return parsed.success ? parsed.data : { decision: "reject", feedback: "the resume value was not a valid decision" };
}

/** Pauses for a person to approve, reject (with feedback: re-plan) or edit the plan. */
export function createApprovePlanNode(deps: GraphDeps) {
  return (state: State, config: LangGraphRunnableConfig): Update => {
    const decision = ask({ kind: "plan-approval", payload: { plan: planView(state), ...(state.planAnswer ? { answer: state.planAnswer } : {}) } });
    const visit: Update = { nodes: ["approve_plan"], metrics: { nodeVisits: 1 } };
    switch (decision.decision) {
      case "approve":
      case "continue":
        return { ...visit, planStatus: "approved" };
      case "edit": {
        const edited = z.array(PlannedSubtask).safeParse(decision.plan ?? []);
        // The plan's answer stays when it still reads for the edited steps.
        const checked = edited.success ? checkPlan(edited.data, deps, state, config, state.planAnswer ?? undefined) : { errors: [z.prettifyError(edited.error)] };
        if ("subtasks" in checked) {
          emit(config, { type: "plan-ready", attempt: state.planAttempts, subtasks: checked.subtasks, ...(checked.notes.length > 0 ? { notes: checked.notes } : {}), ...(checked.answer !== undefined ? { answer: checked.answer } : {}) });
          announceRoute(config, checked.subtasks, state.settings.review, checked.answer);
          return { ...visit, plan: checked.subtasks, planNotes: checked.notes, planAnswer: checked.answer ?? null, planStatus: "approved" };
        }
        return replan(state, visit, [`The person's edited plan was invalid: ${checked.errors.join("; ")}`]);
      }
      case "answer":
        return replan(state, visit, [decision.answer]);
      case "reject":
        if (!decision.feedback) return { ...visit, stopReason: "rejected" };
        return replan(state, visit, [decision.feedback]);
      case "elicitation":
        // Only a tool server's question takes this (the engine refuses it here): nothing approved it.
        return { ...visit, stopReason: "rejected" };
    }
  };
}

/** Back to the planner with a person's words, added to what it was told before (a second rejection's feedback does not undo the first's). */
function replan(state: State, visit: Update, feedback: string[]): Update {
  if (state.rejections + 1 > state.settings.maxIterations) return { ...visit, stopReason: "rejected" };
  return { ...visit, planStatus: "none", planAttempts: 0, planErrors: [], planFeedback: [...state.planFeedback, ...feedback].slice(-20), rejections: state.rejections + 1 };
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
