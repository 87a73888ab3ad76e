import { AgentEvent, type ExecutionEventBus } from "@a2a-js/sdk/server";
import { TaskState } from "@a2a-js/sdk";
import type { Principal } from "../config.js";
import { followRun, type RunFeed } from "../run-follow.js";
import type { RunTaskStore } from "./run-task-store.js";
import { agentMessage, artifactUpdate, progressOf, questionMessage, statusMessageOf, statusUpdate, taskStateOf, textPart, usageOf } from "./task-view.js";
import { threadNameOfRun } from "../../core/thread-key.js";

/**
 * Tells an A2A event bus what a run does, from its events after `after` until it rests: progress
 * as `working` updates, each finished subtask as an artifact; then the end — the answer and the
 * files it wrote as artifacts and the final state, or the question of a run waiting for a person
 * (`input-required`), or `working` for a run a shutdown suspended. Resolves with the state told last.
 */
export async function bridgeRun(
  feed: RunFeed,
  principal: Principal,
  run: { id: string; threadId: string; owner: string | null },
  after: number,
  bus: ExecutionEventBus,
  store: RunTaskStore,
  signal?: AbortSignal,
): Promise<TaskState | undefined> {
  const runId = run.id;
  // The context is the thread as its owner names it (core/thread-key.ts).
  let contextId = threadNameOfRun(run);
  const record = await followRun(
    feed,
    principal,
    runId,
    after,
    (event) => {
      if (event.type === "run-start") contextId = event.threadId;
      for (const update of progressOf(event, runId, contextId)) {
        bus.publish("artifact" in update ? AgentEvent.artifactUpdate(update) : AgentEvent.statusUpdate(update));
      }
    },
    signal,
  );
  if (!record) return undefined;
  contextId = threadNameOfRun(record);
  const state = taskStateOf(record, feed.tasks.isActive(record.id));
  if (state === TaskState.TASK_STATE_COMPLETED || state === TaskState.TASK_STATE_FAILED) {
    // The answer and the files, as the task store keeps them for the reads that follow.
    for (const artifact of (await store.taskOf(record)).artifacts) bus.publish(AgentEvent.artifactUpdate(artifactUpdate(runId, contextId, structuredClone(artifact))));
  }
  const usage = usageOf(record);
  const metadata = { troupe: { runId, status: record.status, stopReason: record.stopReason, ...(usage ? { usage } : {}) } };
  if (state === TaskState.TASK_STATE_INPUT_REQUIRED && record.interrupt) {
    bus.publish(AgentEvent.statusUpdate(statusUpdate(runId, contextId, state, questionMessage(runId, contextId, record.interrupt), metadata)));
  } else if (state === TaskState.TASK_STATE_WORKING) {
    const why = record.suspended ? `suspended by a ${record.suspended}; it continues when the server starts` : "working";
    bus.publish(AgentEvent.statusUpdate(statusUpdate(runId, contextId, state, agentMessage(runId, contextId, [textPart(why)]), metadata)));
  } else {
    bus.publish(AgentEvent.statusUpdate(statusUpdate(runId, contextId, state, statusMessageOf(record, state), metadata)));
  }
  return state;
}
