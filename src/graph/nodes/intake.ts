import { Overwrite } from "@langchain/langgraph";
import { emptyMetrics, TaskText } from "../../core/run.js";
import { emptyOutcome, type State, type Update } from "../state.js";

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
    ...emptyOutcome(),
    planFeedback: [],
    planNotes: [],
    planAnswer: null,
    humanAnswers: new Overwrite([]),
    rejections: 0,
    results: new Overwrite({}),
    nodes: new Overwrite(["intake"]),
    toolCalls: new Overwrite([]),
    board: new Overwrite([]),
    metrics: new Overwrite({ ...emptyMetrics(), nodeVisits: 1 }),
  };
}
