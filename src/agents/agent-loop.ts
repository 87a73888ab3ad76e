import type { CallOptions } from "./model-call.js";
import type { DurableStep, AgentLoopInput, AgentLoopOutcome } from "./agent-loop-types.js";
import { AgentLoopRun } from "./agent-loop-run.js";
export type { AgentLoopTrust } from "./agent-loop-provenance.js";
export type { DependencyView, DurableStep, AgentLoopInput, ModelStep, ToolStep, AgentToolCall, AgentLoopOutcome } from "./agent-loop-types.js";

/** Runs every step afresh (outside a graph, and for the items of a map, whose order is not deterministic). */
export const immediateStep: DurableStep = async (_name, work) => ({ value: await work(), replayed: false });

/**
 * The agent loop (what runs a subtask on its agent — the "worker" role, not the `troupe worker`
 * process): a bounded tool-calling loop (model ↔ tools) that ends with a structured outcome —
 * the model calls `submit_result` with done and its result (text, or the handle of a tool
 * output or argument, passed on byte for byte), or failed / unable with the reason. A model
 * that answers in plain text instead is asked once, through structured output, what the
 * outcome was, so a message saying the work could not be done never counts as done. The loop
 * also stops after `maxSteps` model calls, when the same tool is called with the same
 * arguments a third time, or when a person rejects one of its tool calls (the rejection is
 * final for this attempt: the planner hears of it). Every failure is an outcome, never a
 * thrown error — except cancellation and a spent budget, which stop the run rather than the
 * subtask. With durable steps (`input.step`), each model call and each tool call is a step, so
 * a worker that runs again after a pause repeats none of them. Every tool call goes to the
 * registry, which checks the agent's permissions (a tool the model was not offered is refused
 * there, and audited) and never throws.
 */
export async function runAgentLoop(input: AgentLoopInput, options: CallOptions): Promise<AgentLoopOutcome> {
  const run = await AgentLoopRun.open(input, options, input.step ?? immediateStep);
  return run.run();
}
