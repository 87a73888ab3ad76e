import { openIssues, unreviewedIssues, workerAnswer } from "../route.js";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { bestAnswerSoFar, runSynthesizer } from "../../agents/synthesizer.js";
import { isBudgetExhausted } from "../../core/budget.js";
import { errorMessage } from "../../core/errors.js";
import type { PlannedSubtask } from "../../core/plan.js";
import type { AnswerFormat, AnswerSource } from "../../core/run.js";
import { routeFor, routeForModel } from "../../providers/registry.js";
import { announceBudgetStop, callOptions, createMeter, emit, type GraphDeps, outcomeSources, planView } from "../deps.js";
import { evidenceSection } from "../../core/evidence.js";
import { answerEvidence, researchSources } from "../evidence.js";
import { unwrittenSection } from "../unwritten.js";
import { templateAnswer } from "../template-answer.js";
import type { State, Update } from "../state.js";

/** Written by code after an answer: the evidence behind a research answer, and files that could not be written ("" when neither). */
async function codeTail(state: State, deps: GraphDeps, answer: string, evidence: boolean): Promise<string> {
  const index = evidence ? answerEvidence(state, answer) : null;
  const parts = [index ? evidenceSection(index) : "", await unwrittenSection(state, deps.stash)].filter(Boolean);
  return parts.length === 0 ? "" : `\n\n${parts.join("\n\n")}`;
}

/**
 * The plan's answer template filled by code from the verified results (graph/template-answer.ts),
 * as the answer's update — or, when it cannot be used, why not (for the synthesizer that
 * words the answer instead to say), or nothing when the plan gave none. It reads as text: what
 * fills it is tool results, which Markdown would misread (14*3*2 is no emphasis).
 */
export async function planAnswer(state: State, deps: GraphDeps, config: LangGraphRunnableConfig): Promise<Update & { unused?: string }> {
  const templated = await templateAnswer(state, deps.stash);
  if (!templated) return {};
  if ("unused" in templated) return { unused: templated.unused };
  // No evidence index: every value in it is a verified result put there by code, and its words are the plan's.
  const tail = await codeTail(state, deps, templated.text, false);
  // Whole at once, as any answer not written token by token: its `answer` event carries it (no tokens).
  const answer = `${templated.text}${tail}`;
  emit(config, { type: "answer", text: answer, format: "text" });
  const answerSource: AnswerSource = { by: "template", reason: "the plan stated its answer: filled by code from the verified results", ...(templated.untrusted ? { untrusted: templated.untrusted } : {}) };
  return { answer, answerFormat: "text", answerStatus: "draft", answerSource };
}

/**
 * Writes the answer, streaming it as `answer-token` events when the provider streams. Once the
 * budget is spent, the best answer so far is written by code, so it costs nothing more. If the
 * synthesizer model fails, the answer lists the results and the run fails. Each answer carries
 * how it is meant to be read, by who wrote it: a language model's is Markdown, one written by
 * rules or code (the offline model, a tool's result, a listing, JSON) is text.
 */
export function createSynthesizerNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = createMeter(config);
    const visit = (update: Update): Update => ({ ...update, nodes: ["synthesizer"], modelIncidents: meter.incidents, metrics: { nodeVisits: 1, ...meter.usage } });
    const views = planView(state);
    // Whether the answer went out as tokens: what code adds after it then streams too; otherwise the whole answer comes in its `answer` event only.
    let streamed = false;
    const token = (text: string): void => {
      streamed = true;
      emit(config, { type: "answer-token", text });
    };
    const appended = async (answer: string, evidence: boolean): Promise<string> => {
      const tail = await codeTail(state, deps, answer, evidence);
      if (tail && streamed) token(tail);
      return `${answer}${tail}`;
    };
    const answered = (answer: string, answerFormat: AnswerFormat, answerSource: AnswerSource, update: Update = {}): Update => {
      emit(config, { type: "answer", text: answer, format: answerFormat });
      return visit({ answer, answerFormat, answerSource, answerStatus: "draft", ...update });
    };
    if (state.stopReason === "budget_exhausted") {
      return answered(await appended(bestAnswerSoFar(state.task, views, state.budgetStop, openIssues(state)), false), "text", { by: "code", reason: "the budget ran out: the results so far, listed by code" });
    }
    // The plan stated its answer: filled by code from the verified results (no model call).
    const { unused, ...fromPlan } = await planAnswer(state, deps, config);
    if (fromPlan.answer !== undefined) return visit(fromPlan);
    // The fast route: the one worker was told its result is the answer; when it is text, it is (no model call).
    const fromWorker = await workerAnswer(state, deps.stash);
    if (fromWorker !== undefined) {
      token(fromWorker.text);
      return answered(await appended(fromWorker.text, true), workerFormat(deps, fromWorker.subtask), { by: "worker", reason: "the fast route: the plan's one worker's result" });
    }
    const written: AnswerSource = {
      by: "synthesizer",
      reason: unused !== undefined ? `the plan's answer could not be used: ${unused}` : "the plan gave no answer of its own: a model words it",
    };
    try {
      const input = {
        model: routeFor(deps.models, "synthesizer"),
        task: state.task,
        context: state.context ?? undefined,
        outcomes: await outcomeSources(state, deps.stash),
        issues: [...openIssues(state), ...unreviewedIssues(state)],
        feedback: state.answerFeedback,
        promptBudget: state.settings.promptBudget,
        onToken: token,
        cite: researchSources(state).map((source) => source.id),
      };
      const schema = state.settings.outputSchema;
      if (schema) {
        // A typed answer: JSON valid against the run's schema, or a failed step with the validation errors.
        const typed = await runSynthesizer({ ...input, outputSchema: schema }, callOptions(deps, state.runId, config, meter));
        return answered(typed.text, typed.format, written, { output: typed.output ?? null });
      }
      const answer = await runSynthesizer(input, callOptions(deps, state.runId, config, meter));
      return answered(await appended(answer.text, true), answer.format, written);
    } catch (error) {
      if (config.signal?.aborted) throw error;
      if (isBudgetExhausted(error)) {
        announceBudgetStop(deps, state.runId, config, error);
        const answer = await appended(bestAnswerSoFar(state.task, views, error.stop, openIssues(state)), false);
        return answered(answer, "text", { by: "code", reason: "the budget ran out before the synthesizer answered: the results so far, listed by code" }, { stopReason: "budget_exhausted", budgetStop: error.stop });
      }
      const lines = views.map((view) => `- ${view.id} ${view.label}: ${view.status === "done" ? (view.summary ?? "done") : `${view.status} ${view.error ?? ""}`}`);
      const answer = await appended([`The synthesizer failed (${errorMessage(error)}). Results of the subtasks:`, ...lines].join("\n"), false);
      return visit({
        answer,
        answerFormat: "text",
        answerStatus: "draft",
        stopReason: state.stopReason ?? "failed",
        failure: `the synthesizer failed: ${errorMessage(error)}`,
        answerSource: { by: "code", reason: "the synthesizer failed: the results listed by code" },
      });
    }
  };
}

/** How a worker's result reads as the answer: as its agent's model writes (Markdown for a language model, text for the offline model's rules). */
function workerFormat(deps: GraphDeps, subtask: Pick<PlannedSubtask, "agent">): AnswerFormat {
  const model = deps.agents.get(subtask.agent)?.model;
  return routeForModel(deps.models, model, "worker").candidates[0]?.answerFormat ?? "markdown";
}
