import { isGraphBubbleUp, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { errorMessage } from "../core/errors.js";
import type { RunStep } from "../core/events.js";
import { truncate } from "../core/text.js";
import { announce, emit } from "./deps.js";

/**
 * Runs one step of the run between its `step-start` and `step-end` events, so whoever follows
 * the run (the server's observer, the event stream) knows what is at work without reading
 * LangGraph's node or task names. An interrupt ends the step as paused, and is passed on.
 */
export async function inStep<Output>(config: LangGraphRunnableConfig | undefined, step: RunStep, work: () => Promise<Output>): Promise<Output> {
  const startedAt = Date.now();
  await announce(config, { type: "step-start", step });
  try {
    const output = await work();
    emit(config, { type: "step-end", step, outcome: "done", durationMs: Date.now() - startedAt });
    return output;
  } catch (error) {
    const paused = isGraphBubbleUp(error);
    emit(config, {
      type: "step-end",
      step,
      outcome: paused ? "paused" : "failed",
      durationMs: Date.now() - startedAt,
      ...(paused ? {} : { error: truncate(errorMessage(error), 300) }),
    });
    throw error;
  }
}

/** A graph node that runs as the named step of the run. */
export function stepNode<Input, Output>(step: RunStep, node: (input: Input, config: LangGraphRunnableConfig) => Output | Promise<Output>) {
  return (input: Input, config: LangGraphRunnableConfig): Promise<Output> => inStep(config, step, async () => node(input, config));
}
