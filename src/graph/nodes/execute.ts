import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { GraphDeps } from "../deps.js";
import { Dispatcher, executed } from "../execution/dispatcher.js";
import type { State, Update } from "../state.js";
import { isUnfinished } from "../subtask-status.js";

/**
 * The `execute` node: runs the plan's unfinished subtasks, each as its own LangGraph task, and
 * starts each the moment its last dependency has finished and a concurrency slot is free —
 * whatever else is running, not wave by wave (see Dispatcher). A replay after a crash hands
 * every finished subtask its own saved result and runs only the others.
 */
export function createExecuteNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const dispatcher = new Dispatcher(deps, { state, plan: () => state.plan }, config);
    for (const subtask of state.plan) if (isUnfinished(state, subtask.id)) dispatcher.add(subtask);
    return executed(await dispatcher.finish(), "execute");
  };
}
