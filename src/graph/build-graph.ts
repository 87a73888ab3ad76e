import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { END, START, StateGraph } from "@langchain/langgraph";
import { COORDINATOR_TARGETS, coordinate } from "./coordinator.js";
import type { GraphDeps } from "./deps.js";
import { createFinalizeNode } from "./nodes/finalize.js";
import { createIntakeNode } from "./nodes/intake.js";
import { createExecuteNode } from "./nodes/execute.js";
import { createApprovePlanNode, createAskHumanNode } from "./nodes/plan-approval.js";
import { createPlannerNode } from "./nodes/planner.js";
import { createApproveAnswerNode } from "./nodes/approve-answer.js";
import { createCriticNode } from "./nodes/critic.js";
import { createSynthesizerNode } from "./nodes/synthesizer.js";
import { TroupeState, type Update } from "./state.js";
import { stepNode } from "./steps.js";

/** Channels whose reducer appends: an empty list adds nothing. */
const APPENDED = ["nodes", "toolCalls", "modelIncidents", "humanAnswers", "reviews", "reviewDecisions", "board"] as const;

/**
 * A node's update without the empty lists it hands to appending channels: each written channel
 * is a row in the checkpoint's writes and a new channel version, and an empty list changes nothing.
 */
function compact(update: Update): Update {
  let copy: Update | undefined;
  for (const key of APPENDED) {
    const value = update[key];
    if (Array.isArray(value) && value.length === 0) {
      copy ??= { ...update };
      delete copy[key];
    }
  }
  return copy ?? update;
}

/** The node, its update compacted. */
function compacted<Input, Config>(node: (input: Input, config: Config) => Update | Promise<Update>) {
  return async (input: Input, config: Config): Promise<Update> => compact(await node(input, config));
}

/**
 * The uncompiled orchestration graph (also what `troupe graph` draws). Every node but finalize
 * hands control back to the coordinator, which routes from the state; `execute` runs the plan's
 * subtasks, each as its own LangGraph task started when its inputs exist. Each node runs as the
 * step of its role (`stepNode`): the run's events say which step is at work.
 */
export function createGraph(deps: GraphDeps) {
  return new StateGraph(TroupeState)
    .addNode("intake", stepNode("intake", createIntakeNode(deps)))
    .addNode("planner", stepNode("planner", compacted(createPlannerNode(deps))))
    .addNode("approve_plan", stepNode("approve_plan", createApprovePlanNode(deps)))
    .addNode("ask_human", stepNode("ask_human", createAskHumanNode()))
    .addNode("execute", stepNode("execute", compacted(createExecuteNode(deps))))
    .addNode("critic", stepNode("critic", compacted(createCriticNode(deps))))
    .addNode("synthesizer", stepNode("synthesizer", compacted(createSynthesizerNode(deps))))
    .addNode("approve_answer", stepNode("approve_answer", createApproveAnswerNode()))
    .addNode("finalize", stepNode("finalize", createFinalizeNode(deps)))
    .addEdge(START, "intake")
    .addConditionalEdges("intake", coordinate, COORDINATOR_TARGETS)
    .addConditionalEdges("planner", coordinate, COORDINATOR_TARGETS)
    .addConditionalEdges("approve_plan", coordinate, COORDINATOR_TARGETS)
    .addConditionalEdges("ask_human", coordinate, COORDINATOR_TARGETS)
    .addConditionalEdges("execute", coordinate, COORDINATOR_TARGETS)
    .addConditionalEdges("critic", coordinate, COORDINATOR_TARGETS)
    .addConditionalEdges("synthesizer", coordinate, COORDINATOR_TARGETS)
    .addConditionalEdges("approve_answer", coordinate, COORDINATOR_TARGETS)
    .addEdge("finalize", END);
}

/** The one compiled graph every entry point (CLI, server, tests) runs. */
export function buildGraph(deps: GraphDeps, checkpointer?: BaseCheckpointSaver) {
  return createGraph(deps).compile({ checkpointer, name: "troupe" });
}

export type TroupeGraph = ReturnType<typeof buildGraph>;
