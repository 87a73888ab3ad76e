import { TaskState } from "@a2a-js/sdk";
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext } from "@a2a-js/sdk/server";
import type { Logger } from "pino";
import { errorMessage } from "../../core/errors.js";
import type { Principal } from "../config.js";
import { isResting, lastEventSeq, type RunFeed } from "../run-follow.js";
import type { RunBusManager } from "./bus-manager.js";
import { INTENT_KEY, type MessageIntent } from "./message-intent.js";
import { bridgeRun } from "./run-bridge.js";
import { principalOf, type RunTaskStore } from "./run-task-store.js";
import { agentMessage, statusUpdate, taskOf, textPart } from "./task-view.js";
import { threadNameOfRun } from "../../core/thread-key.js";

/**
 * The A2A agent executor: a message starts a troupe run on the thread named by its context id
 * (through the task service: the same queue, limits and ownership as a REST submission), answers
 * a run waiting for a person, or joins a run that is going; then it tells the bus what the run
 * does until it rests. Cancelling a task cancels its run.
 */
export class TroupeAgentExecutor implements AgentExecutor {
  readonly #feed: RunFeed;
  readonly #log: Logger;
  readonly #store: RunTaskStore;
  #buses: RunBusManager | undefined;

  constructor(feed: RunFeed, store: RunTaskStore, log: Logger) {
    this.#feed = feed;
    this.#store = store;
    this.#log = log;
  }

  /** The bus manager, once made (it and the executor need each other). */
  attach(buses: RunBusManager): void {
    this.#buses = buses;
  }

  execute = async (requestContext: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const principal = principalOf(requestContext.context);
    const intent = requestContext.context.state.get(INTENT_KEY) as MessageIntent | undefined;
    if (!intent) throw new Error("the message was not accepted before it reached the executor");
    const { tasks } = this.#feed;
    const { runId, after } = intent;
    this.#buses?.link(runId, bus);
    const record = await tasks.record(principal, runId);
    const task = await taskOf(tasks.troupe, record, tasks.isActive(runId), { artifacts: false });
    task.history.push(requestContext.userMessage);
    bus.publish(AgentEvent.task(task));
    if (intent.kind === "follow") bus.publish(AgentEvent.statusUpdate(statusUpdate(runId, threadNameOfRun(record), task.status?.state ?? TaskState.TASK_STATE_WORKING, agentMessage(runId, threadNameOfRun(record), [textPart("the task is under way; this message changes nothing")]))));
    await bridgeRun(this.#feed, principal, record, after, bus, this.#store);
  };

  /** Cancels the run behind a task that is followed here; the bridge tells the bus when it has stopped. */
  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const { tasks } = this.#feed;
    const record = await tasks.troupe.store.runs.get(taskId);
    if (!record || record.owner === null) return;
    const owner: Principal = { id: record.owner };
    try {
      await tasks.cancel(owner, taskId);
    } catch (error) {
      // Ended meanwhile: say where it stands, so the cancel's wait ends.
      this.#log.info({ taskId, err: errorMessage(error) }, "A2A cancel of a task that had ended");
      const now = await tasks.record(owner, taskId);
      const task = await taskOf(tasks.troupe, now, false, { artifacts: false });
      bus.publish(AgentEvent.statusUpdate(statusUpdate(taskId, threadNameOfRun(now), task.status?.state ?? TaskState.TASK_STATE_FAILED, task.status?.message)));
    }
  };

  /**
   * Starts telling a run to a bus made for a client that resubscribed or cancels, wherever the run
   * is driven (this process, or another through the store's notifications); the bus is finished
   * at once when there is no such run or it rests (the client has its snapshot), else when it does.
   */
  bridge(runId: string, bus: ExecutionEventBus): void {
    const { tasks } = this.#feed;
    void (async () => {
      try {
        const record = await tasks.troupe.store.runs.get(runId);
        if (!record || record.owner === null || isResting(record, tasks)) return;
        await bridgeRun(this.#feed, { id: record.owner }, record, await lastEventSeq(this.#feed, runId), bus, this.#store);
      } catch (error) {
        this.#log.warn({ taskId: runId, err: errorMessage(error) }, "A2A bridge of a run stopped");
      } finally {
        bus.finished();
        this.#buses?.cleanupByTaskId(runId);
      }
    })();
  }
}
