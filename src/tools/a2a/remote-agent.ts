import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { type AgentCard, type Message, Role, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { z } from "zod";
import { RemoteAgentConfig } from "./remote-agent-config.js";
import { ConfigError, errorMessage, isTroupeError, ToolError, TroupeError } from "../../core/errors.js";
import { heldLabel, LabelledValue, sourceOf } from "../../core/provenance.js";
import type { RemoteTasks } from "../../core/remote-tasks.js";
import { preview, truncate } from "../../core/text.js";
import { defineTool, type ToolContext, type ToolDefinition } from "../define-tool.js";
import { checkUrl, type NetworkRules, SSRF_CODE } from "../net/address-guard.js";
import { createGuardedFetch, networkCodeOf, reachFailure } from "./guarded-fetch.js";
import { textOfParts, valueOfMessage, valueOfTask } from "./remote-result.js";

/** How long fetching an agent card may take. */
const CARD_TIMEOUT_MS = 10_000;
/** How long sending a message may take until the agent answers with its task (not the task's work). */
const SEND_TIMEOUT_MS = 30_000;
/** Failed waits on a task in a row before the agent counts as unreachable (about 30 s of backoff). */
const MAX_WAIT_FAILURES = 8;

/** A message to a remote agent: its text, a data part (the subtask's arguments), and — for a reply — the task it answers. */
export const RemoteCallArgs = z
  .object({
    text: z.string().min(1).max(100_000).describe("what to do, in words"),
    data: z.unknown().optional().describe("structured input, sent as a data part"),
    taskId: z.string().min(1).max(500).optional().describe("the task this message answers (a task waiting for input)"),
    contextId: z.string().min(1).max(500).optional(),
  })
  .strict();
export type RemoteCallArgs = z.infer<typeof RemoteCallArgs>;

/** How a call to a remote agent came back: finished with a result, or waiting for a person's input. */
export type RemoteCallValue =
  | { state: "completed"; taskId: string; contextId: string; result: unknown; usage?: RemoteUsage }
  | { state: "input-required"; taskId: string; contextId: string; question: string; kind?: string; payload?: Record<string, unknown>; usage?: RemoteUsage };

export interface RemoteUsage {
  llmCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
}

/** A remote agent reached: its card, its client, and the tool troupe's subtasks reach it by. */
export interface RemoteAgentConnection {
  name: string;
  url: string;
  card: AgentCard;
  tool: ToolDefinition;
  /** What the planner is told about it (the config's description, else the card's, with its skills). */
  description: string;
  /** Its capabilities: the config's, else its skills' ids and tags as capability names. */
  capabilities: string[];
}

export interface RemoteAgentOptions {
  rules: NetworkRules;
  /** Where the tasks it makes are kept by call id (absent: a crash mid-call sends again). */
  tasks?: RemoteTasks;
  env?: NodeJS.ProcessEnv;
}

const RESTING = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);

/** The tool name a remote agent is reached by. */
export function remoteToolName(agent: string): string {
  return `a2a.${agent}`;
}

/** A message id made from the call id: the same call sends the same message (a troupe peer answers a repeat with the task it made). */
function messageIdOf(callId: string | undefined): string {
  if (!callId) return randomUUID();
  const hex = createHash("sha256").update(callId).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function capabilityName(text: string): string | undefined {
  const name = text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40);
  return /^[a-z][a-z0-9-]*$/.test(name) ? name : undefined;
}

function usageOf(task: Task): RemoteUsage | undefined {
  const usage = (task.metadata as { troupe?: { usage?: Partial<RemoteUsage> } } | undefined)?.troupe?.usage;
  if (!usage) return undefined;
  const number = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0);
  return { llmCalls: number(usage.llmCalls), promptTokens: number(usage.promptTokens), completionTokens: number(usage.completionTokens), costUsd: number(usage.costUsd) };
}

/** A finished or waiting task as the call's value; a task that failed, was cancelled or rejected is the call's failure. */
function outcomeOf(agent: string, task: Task): RemoteCallValue {
  const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
  const said = truncate(textOfParts(task.status?.message?.parts), 2_000);
  const usage = usageOf(task);
  const common = { taskId: task.id, contextId: task.contextId, ...(usage ? { usage } : {}) };
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED:
      return { state: "completed", ...common, result: valueOfTask(task) };
    case TaskState.TASK_STATE_INPUT_REQUIRED: {
      const asked = (task.status?.message?.parts ?? []).flatMap((part) => (part.content?.$case === "data" ? [part.content.value as { kind?: unknown; payload?: unknown }] : []))[0];
      return {
        state: "input-required",
        ...common,
        question: said || "the agent needs more input",
        ...(typeof asked?.kind === "string" ? { kind: asked.kind } : {}),
        ...(typeof asked?.payload === "object" && asked.payload !== null ? { payload: asked.payload as Record<string, unknown> } : {}),
      };
    }
    case TaskState.TASK_STATE_FAILED:
      throw new ToolError("remote_failed", `the remote agent ${agent} failed task ${task.id}${said ? `: ${said}` : ""}`, { taskId: task.id });
    case TaskState.TASK_STATE_REJECTED:
      throw new ToolError("remote_rejected", `the remote agent ${agent} rejected task ${task.id}${said ? `: ${said}` : ""}`, { taskId: task.id });
    case TaskState.TASK_STATE_CANCELED:
      throw new ToolError("remote_cancelled", `task ${task.id} of the remote agent ${agent} was cancelled${said ? `: ${said}` : ""}`, { taskId: task.id });
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      throw new ToolError("remote_auth_required", `the remote agent ${agent} asks for authentication troupe cannot give (task ${task.id})`, { taskId: task.id });
    default:
      throw new ToolError("remote_invalid", `the remote agent ${agent} answered task ${task.id} in state ${state}`, { taskId: task.id });
  }
}

function stateOfEvent(event: StreamResponse): TaskState | undefined {
  const payload = event.payload;
  if (payload?.$case === "task") return payload.value.status?.state;
  if (payload?.$case === "statusUpdate") return payload.value.status?.state;
  return undefined;
}

/** A call's failure as a ToolError: the guard's or the network's when it is one, else what the agent said. */
function failureOf(agent: string, error: unknown): TroupeError {
  if (error instanceof ToolError) return error;
  if (isTroupeError(error)) return new TroupeError(error.code, error.message);
  if (networkCodeOf(error) !== undefined) return reachFailure(error, `the remote agent ${agent}`);
  return new ToolError("remote_error", `the remote agent ${agent} answered with an error: ${errorMessage(error)}`);
}

/**
 * Waits until a task rests (finished, or waiting for input): its stream when the agent streams,
 * then the task itself, read again after each stream ends; a dropped connection is tried again
 * with backoff, up to about 30 s of failures in a row.
 */
async function waitForTask(client: Client, card: AgentCard, taskId: string, signal: AbortSignal): Promise<Task> {
  let failures = 0;
  let pause = 250;
  for (;;) {
    try {
      const task = await client.getTask({ tenant: "", id: taskId, historyLength: 0 }, { signal });
      failures = 0;
      if (RESTING.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) return task;
      if (card.capabilities?.streaming) {
        for await (const event of client.resubscribeTask({ tenant: "", id: taskId }, { signal })) {
          const state = stateOfEvent(event);
          if (state !== undefined && RESTING.has(state)) break;
        }
        pause = 250;
        continue;
      }
    } catch (error) {
      if (signal.aborted) throw error;
      failures += 1;
      if (failures >= MAX_WAIT_FAILURES) throw error;
    }
    await sleep(pause, undefined, { signal });
    pause = Math.min(pause * 2, 4_000);
  }
}

/**
 * Fetches a remote agent's card through the network guard and makes its client (JSON-RPC or
 * HTTP+JSON, whichever the card offers; A2A 0.3 peers through the SDK's compatibility layer), and
 * the tool `a2a.<name>` that sends it a message and waits for the task it makes. The tool keeps
 * the task's id by the call's id before it waits, so the same call after a crash waits on the same
 * task; the agent's failure, cancel, rejection and a timeout are the call's failure (a timed-out
 * task is cancelled at the agent), its question a value for the caller to put to a person.
 */
export async function connectRemoteAgent(given: z.input<typeof RemoteAgentConfig>, options: RemoteAgentOptions): Promise<RemoteAgentConnection> {
  // Given in code as well as read from a file: checked (and completed with its defaults) here too.
  const checked = RemoteAgentConfig.safeParse(given);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new ConfigError("invalid_config", `the remote agent "${String((given as { name?: unknown }).name ?? "?")}": ${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}`, { agent: (given as { name?: unknown }).name });
  }
  const config = checked.data;
  const where = `the remote agent "${config.name}" (${config.a2a})`;
  const cardUrl = new URL(config.a2a);
  const env = options.env ?? process.env;
  let credentials: { origin: string; headers: Record<string, string> } | undefined;
  if (config.apiKeyEnv) {
    const key = env[config.apiKeyEnv];
    if (!key) throw new ConfigError("missing_api_key", `${where}: the environment variable ${config.apiKeyEnv} (its apiKeyEnv) is not set`, { agent: config.name });
    credentials = { origin: cardUrl.origin, headers: { authorization: `Bearer ${key}` } };
  }
  const fetchImpl = createGuardedFetch({ rules: options.rules, ...(credentials ? { credentials } : {}) });
  const cardFetch = ((input: string | URL | Request, init: RequestInit = {}) => fetchImpl(input, { ...init, signal: AbortSignal.timeout(CARD_TIMEOUT_MS) })) as typeof fetch;
  const resolver = new DefaultAgentCardResolver({ fetchImpl: cardFetch, legacyCompat: { enabled: true } });
  let card: AgentCard;
  let client: Client;
  try {
    checkUrl(cardUrl, options.rules);
    card = await resolver.resolve(cardUrl.origin, `${cardUrl.pathname}${cardUrl.search}`);
    if (!card.name || (card.supportedInterfaces ?? []).length === 0) throw new Error("the card names no interface to reach the agent at");
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }), new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
        cardResolver: resolver,
      }),
    );
    client = await factory.createFromAgentCard(card);
  } catch (error) {
    const known = error instanceof ToolError ? error : networkCodeOf(error) !== undefined ? reachFailure(error, cardUrl.href) : undefined;
    let reason = known ? known.message : errorMessage(error);
    if (known?.code === SSRF_CODE && !reason.includes("allowAddresses")) reason += " (allow it with tools.fetch.allowAddresses)";
    throw new ConfigError("remote_agent_unavailable", `${where} could not be used: ${reason}`, { agent: config.name, url: config.a2a });
  }
  const skills = card.skills ?? [];
  const description = truncate(
    `${config.description ?? card.description ?? card.name} (a remote agent over A2A${skills.length > 0 ? `; skills: ${skills.map((skill) => `${skill.name}${skill.description ? ` — ${skill.description}` : ""}`).join("; ")}` : ""})`,
    1_000,
  );
  // A skill's tags say what it is good at; a skill without tags by its id.
  const capabilities = config.capabilities ?? [...new Set(skills.flatMap((skill) => ((skill.tags ?? []).length > 0 ? skill.tags : [skill.id])).flatMap((text) => capabilityName(text) ?? []))].slice(0, 20);
  const name = remoteToolName(config.name);
  // Sends the message and waits for the task it makes (or the one a resume finds by the call id).
  const send = async (args: z.infer<typeof RemoteCallArgs>, context: ToolContext): Promise<RemoteCallValue> => {
    const signal = context.signal ?? new AbortController().signal;
    const callId = context.callId;
    let taskId = callId && options.tasks ? (await options.tasks.find(callId))?.taskId : undefined;
    try {
      if (taskId === undefined) {
        const message: Message = {
          messageId: messageIdOf(callId),
          contextId: args.contextId ?? "",
          taskId: args.taskId ?? "",
          role: Role.ROLE_USER,
          parts: [
            { content: { $case: "text", value: args.text }, mediaType: "text/plain", filename: "", metadata: undefined },
            ...(args.data !== undefined ? [{ content: { $case: "data" as const, value: args.data }, mediaType: "application/json", filename: "", metadata: undefined }] : []),
          ],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        };
        // The send answers as soon as the task exists, and is not cut short by a cancel or a timeout: a message that
        // reached the agent must give back the task's id, so the task can be cancelled and a resume can find it.
        const sent = await client.sendMessage(
          { tenant: "", message, configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true }, metadata: undefined },
          { signal: AbortSignal.timeout(SEND_TIMEOUT_MS) },
        );
        if (!("status" in sent)) return { state: "completed", taskId: "", contextId: sent.contextId, result: valueOfMessage(sent) };
        taskId = sent.id;
        if (callId && options.tasks) await options.tasks.save({ callId, agent: config.name, url: config.a2a, taskId, contextId: sent.contextId, createdAt: Date.now() });
        signal.throwIfAborted();
        if (RESTING.has(sent.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED) && sent.status?.state !== TaskState.TASK_STATE_COMPLETED) return outcomeOf(config.name, sent);
      }
      return outcomeOf(config.name, await waitForTask(client, card, taskId, signal));
    } catch (error) {
      // Given up on (a timeout, the run cancelled): the agent is told to stop. A drain leaves it going, for the resume to wait on.
      const reason = signal.reason as { name?: string; code?: string } | undefined;
      if (signal.aborted && taskId !== undefined && (reason?.name === "TimeoutError" || reason?.code === "run_cancelled")) {
        await client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      }
      throw failureOf(config.name, error);
    }
  };
  const tool = defineTool({
    name,
    description: truncate(`Send work to the remote agent ${config.name}: ${description}`, 1_000),
    schema: RemoteCallArgs,
    permission: config.level,
    riskLevel: config.risk,
    // Safe to call again with the same call id: it waits on the task it made instead of sending twice.
    idempotent: true,
    retries: 0,
    remote: true,
    timeoutMs: config.timeoutMs,
    source: `a2a:${config.a2a}`,
    // What another system's agent answers is untrusted data (docs/trust.md) unless the config trusts it; the agent it goes to is fixed by the config, not an argument.
    ...(config.trusted ? {} : { origin: () => [sourceOf("remote-agent", config.name)] }),
    // The message goes to another system: data read from the workspace, memory or another tool needs the task's or the config's word to go there.
    sends: () => ({ destination: { kind: "agent", name: config.name }, payload: { text: "name", data: "code" } }),
    describe: (args) => `send the remote agent ${config.name} the message ${JSON.stringify(preview(args.text, 200))}${args.data !== undefined ? ` with data ${preview(args.data, 200)}` : ""}`,
    async execute(args, context): Promise<RemoteCallValue | LabelledValue> {
      const value = await send(args, context);
      // A trusted agent's answer is trusted, and still that system's private data (for the egress check).
      return config.trusted ? new LabelledValue(value, heldLabel([sourceOf("remote-agent", config.name)])) : value;
    },
    summarize: (value) => {
      const call = value as RemoteCallValue;
      return call.state === "input-required" ? `asks: ${truncate(call.question, 200)}` : preview(call.result, 300);
    },
  });
  return { name: config.name, url: config.a2a, card, tool, description, capabilities };
}
