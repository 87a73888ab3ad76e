import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { GraphDeps } from "../deps.js";
import type { Update } from "../state.js";
import type { SubtaskLive, SubtaskPayload } from "./subtask-payload.js";
import { SubtaskRun } from "./subtask-run.js";


/**
 * Runs one subtask: a direct tool step, or a worker's tool-calling loop — once, or once per
 * item of its `mapOver` list. Arguments are resolved from the stash just before it starts, and
 * its result goes to the stash; the state gets the handle and a summary. A failure is a
 * result, not a crash. Every tool call, direct or a worker's, goes through the registry's
 * permissions and audit.
 *
 * A subtask that may wait for a person's approval of a tool call makes its steps durable, so
 * its re-run on resume repeats none of them (nor announces the subtask twice). The items of a
 * map are not: they run in parallel, so the order of their steps is not deterministic, and an
 * item's isolation would swallow the pause — a mapped subtask gets no approver, and its
 * high-risk calls are refused (and audited).
 *
 * The steps are SubtaskRun's (src/graph/execution/subtask-run.ts).
 */
export function createRunSubtask(deps: GraphDeps) {
  return async (payload: SubtaskPayload, config: LangGraphRunnableConfig, live?: SubtaskLive): Promise<Update> => {
    const run = new SubtaskRun(deps, payload, config, live);
    const startedAt = await run.start();
    const attempt = run.checked(await run.attempt());
    const result = await run.result(attempt, startedAt);
    return run.finish(result, startedAt);
  };
}
