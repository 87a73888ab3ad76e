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
import type { TaskService } from "../task-service.js";
import type { RunBusManager } from "./bus-manager.js";
import { INTENT_KEY, intentOf } from "./message-intent.js";
import { principalOf, type RunTaskStore } from "./run-task-store.js";
import type { TroupeAgentExecutor } from "./troupe-executor.js";

/**
 * The SDK's `DefaultRequestHandler` over troupe's runs, with one step before it: a message is
 * worked out and checked first (`intentOf`), so a message that cannot become or answer a run is
 * a protocol error and no task is made. Everything else is the SDK's.
 */
export class TroupeRequestHandler implements A2ARequestHandler {
  readonly #inner: DefaultRequestHandler;
  readonly #tasks: TaskService;

  constructor(card: AgentCard, tasks: TaskService, store: RunTaskStore, executor: TroupeAgentExecutor, buses: RunBusManager) {
    this.#tasks = tasks;
    this.#inner = new DefaultRequestHandler(card, store, executor, buses);
  }

  async #checked(params: SendMessageRequest, context: ServerCallContext): Promise<void> {
    if (!params.message) throw new RequestMalformedError("message is required");
    context.state.set(INTENT_KEY, await intentOf(this.#tasks, principalOf(context), params.message));
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

  getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    return this.#inner.getTask(params, context);
  }

  cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    return this.#inner.cancelTask(params, context);
  }

  listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return this.#inner.listTasks(params, context);
  }

  resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    return this.#inner.resubscribe(params, context);
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
