import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from "@a2a-js/sdk";
import { type A2ARequestHandler, DefaultRequestHandler, type ServerCallContext } from "@a2a-js/sdk/server";
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import type { RunFeed } from "../run-follow.js";
import type { RunBusManager } from "./bus-manager.js";
import { acceptMessage, INTENT_KEY } from "./message-intent.js";
import { checkListRequest, principalOf, type RunTaskStore } from "./run-task-store.js";
import type { TroupeAgentExecutor } from "./troupe-executor.js";

/** A `historyLength` as A2A allows it: unset, or a whole number of messages from zero. */
function checkHistoryLength(historyLength: number | undefined, where: string): void {
  if (historyLength === undefined) return;
  if (!Number.isInteger(historyLength) || historyLength < 0) throw new RequestMalformedError(`${where} must be a whole number from 0 (0: no history; unset: all of it), got ${String(historyLength)}`);
}

/** A task id the request names: present (the SDK's parsers make a missing one empty). */
function checkTaskId(id: string, where: string): void {
  if (typeof id !== "string" || id === "") throw new RequestMalformedError(`${where} is required: the task's id`);
}

/**
 * The SDK's `DefaultRequestHandler` over troupe's runs, with checks before it: a request's
 * parameters are A2A's (a negative `historyLength`, a page token troupe did not give, a timestamp
 * that is not one are refused), and a message is worked out, checked and carried out first
 * (`acceptMessage`: the run submitted, or the waiting one answered), so a message that cannot
 * become or answer a run is a protocol error and no task is made. Everything else is the SDK's.
 */
export class TroupeRequestHandler implements A2ARequestHandler {
  readonly #inner: DefaultRequestHandler;
  readonly #feed: RunFeed;

  constructor(card: AgentCard, feed: RunFeed, store: RunTaskStore, executor: TroupeAgentExecutor, buses: RunBusManager) {
    this.#feed = feed;
    this.#inner = new DefaultRequestHandler(card, store, executor, buses);
  }

  async #checked(params: SendMessageRequest, context: ServerCallContext): Promise<void> {
    if (!params.message || typeof params.message !== "object") throw new RequestMalformedError("message is required: the message to send");
    if (typeof params.message.messageId !== "string" || params.message.messageId === "") throw new RequestMalformedError("message.messageId is required: a unique id the sender gives each message");
    checkHistoryLength(params.configuration?.historyLength, "configuration.historyLength");
    context.state.set(INTENT_KEY, await acceptMessage(this.#feed, principalOf(context), params.message));
  }

  getAgentCard(): Promise<AgentCard> {
    return this.#inner.getAgentCard();
  }

  getAuthenticatedExtendedAgentCard(params: GetExtendedAgentCardRequest, context: ServerCallContext): Promise<AgentCard> {
    return this.#inner.getAuthenticatedExtendedAgentCard(params, context);
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    await this.#checked(params, context);
    return this.#inner.sendMessage(params, context);
  }

  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    await this.#checked(params, context);
    yield* this.#inner.sendMessageStream(params, context);
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    checkTaskId(params.id, "id");
    checkHistoryLength(params.historyLength, "historyLength");
    return this.#inner.getTask(params, context);
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    checkTaskId(params.id, "id");
    return this.#inner.cancelTask(params, context);
  }

  async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    checkHistoryLength(params.historyLength, "historyLength");
    checkListRequest(params);
    return this.#inner.listTasks(params, context);
  }

  async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    checkTaskId(params.id, "id");
    yield* this.#inner.resubscribe(params, context);
  }

  createTaskPushNotificationConfig(params: TaskPushNotificationConfig, context: ServerCallContext): Promise<TaskPushNotificationConfig> {
    return this.#inner.createTaskPushNotificationConfig(params, context);
  }

  getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<TaskPushNotificationConfig> {
    return this.#inner.getTaskPushNotificationConfig(params, context);
  }

  listTaskPushNotificationConfigs(params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext): Promise<ListTaskPushNotificationConfigsResponse> {
    return this.#inner.listTaskPushNotificationConfigs(params, context);
  }

  deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<void> {
    return this.#inner.deleteTaskPushNotificationConfig(params, context);
  }
}
