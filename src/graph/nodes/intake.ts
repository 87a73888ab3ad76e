import { Overwrite } from "@langchain/langgraph";
import { emptyMetrics, TaskText } from "../../core/run.js";
import type { State, Update } from "../state.js";

/**
 * Validates and normalises the task, and resets everything a previous run on the same thread
 * left behind, so a thread can hold one run after another.
 */
export function intake(state: State): Update {
  const task = TaskText.parse(state.task);
  return {
    task,
    context: state.context ?? null,
    plan: [],
    planStatus: "none",
    planAttempts: 0,
    planErrors: [],
    planFeedback: [],
    planNotes: [],
    question: null,
    humanAnswers: new Overwrite([]),
    rejections: 0,
    results: new Overwrite({}),
    redoFeedback: {},
    needsReview: false,
    reviews: new Overwrite([]),
    answer: null,
    answerStatus: "none",
    answerFeedback: [],
    stopReason: null,
    failure: null,
    finished: false,
    budgetStop: null,
    modelIncidents: new Overwrite([]),
    nodes: new Overwrite(["intake"]),
    toolCalls: new Overwrite([]),
    board: new Overwrite([]),
    metrics: new Overwrite({ ...emptyMetrics(), nodeVisits: 1 }),
  };
}
