import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { END, START, StateGraph } from "@langchain/langgraph";
import { coordinate } from "./coordinator.js";
import type { GraphDeps } from "./deps.js";
import { dispatch, join, sendWave, createRunSubtaskNode, type SubtaskPayload } from "./nodes/execution.js";
import { intake } from "./nodes/intake.js";
import { createApprovePlanNode, createAskHumanNode, createPlannerNode } from "./nodes/planning.js";
import { createApproveAnswerNode, createCriticNode, createSynthesizerNode, finalize } from "./nodes/review.js";
import { type Route, type State, TroupeState } from "./state.js";

export const ROUTES: Route[] = ["planner", "approve_plan", "ask_human", "dispatch", "critic", "synthesizer", "approve_answer", "finalize"];

/** The uncompiled orchestration graph (also what `troupe graph` draws). */
export function createGraph(deps: GraphDeps) {
  const runSubtask = createRunSubtaskNode(deps);
  return new StateGraph(TroupeState)
    .addNode("intake", intake)
    .addNode("coordinator", coordinate)
    .addNode("planner", createPlannerNode(deps))
    .addNode("approve_plan", createApprovePlanNode(deps))
    .addNode("ask_human", createAskHumanNode())
    .addNode("dispatch", dispatch)
    .addNode("run_subtask", (input: State, config) => runSubtask(input as unknown as SubtaskPayload, config))
    .addNode("join", join)
    .addNode("critic", createCriticNode(deps))
    .addNode("synthesizer", createSynthesizerNode(deps))
    .addNode("approve_answer", createApproveAnswerNode())
    .addNode("finalize", finalize)
    .addEdge(START, "intake")
    .addEdge("intake", "coordinator")
    .addConditionalEdges("coordinator", (state: State) => state.next, ROUTES)
    .addConditionalEdges("dispatch", sendWave, ["run_subtask"])
    .addEdge("run_subtask", "join")
    .addEdge("join", "coordinator")
    .addEdge("planner", "coordinator")
    .addEdge("approve_plan", "coordinator")
    .addEdge("ask_human", "coordinator")
    .addEdge("critic", "coordinator")
    .addEdge("synthesizer", "coordinator")
    .addEdge("approve_answer", "coordinator")
    .addEdge("finalize", END);
}

/** The one compiled graph every entry point (CLI, server, tests) runs. */
export function buildGraph(deps: GraphDeps, checkpointer?: BaseCheckpointSaver) {
  return createGraph(deps).compile({ checkpointer, name: "troupe" });
}

export type TroupeGraph = ReturnType<typeof buildGraph>;
