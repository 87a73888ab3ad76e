import { createHash } from "node:crypto";
import { type Message, type Part, Role } from "@a2a-js/sdk";
import { A2AError, ContentTypeNotSupportedError, RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { errorMessage, isTroupeError } from "../../core/errors.js";
import { LIMITS } from "../../core/limits.js";
import type { InterruptKind } from "../../core/run.js";
import { threadNameOfRun } from "../../core/thread-key.js";
import type { RunRecord } from "../../store/index.js";
import type { Principal } from "../config.js";
import { type PersonReply, resumeBodyOf } from "../interrupt-prompt.js";
import { lastEventSeq, type RunFeed } from "../run-follow.js";
import { A2aRunOptions, ExecuteBody, ThreadId } from "../run-request-wire.js";
import { parseRequestPart } from "../validation.js";
import { TERMINAL_STATES, taskStateOf } from "./task-view.js";

/**
 * What an A2A message did, worked out, checked and carried out before the SDK makes a task of it,
 * so a bad message is a protocol error and nothing is created: it started a run on a thread (the
 * message's text is the task, its data parts the context), answered a run that waited for a
 * person, or reached a run that is going (nothing to do but follow it). A new run's options
 * (max_iterations, approve_plan, budget, …) come in the message's `metadata.troupe`. The executor follows the
 * run from `after` (the events before it are not this message's).
 */
export interface MessageIntent {
  kind: "start" | "answer" | "follow";
  runId: string;
  after: number;
}

/** Where the intent travels from the request handler to the executor. */
export const INTENT_KEY = "troupe.intent";

function textOf(parts: readonly Part[]): string {
  return parts.flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : [])).join("\n");
}

function dataOf(parts: readonly Part[]): unknown[] {
  return parts.flatMap((part) => (part.content?.$case === "data" ? [part.content.value] : []));
}

/**
 * The message's own shape, as A2A requires it: a user's role, and parts that each hold something;
 * troupe reads text and data, so a file part (raw bytes or a URL) is a content type it does not take.
 */
export function checkMessageShape(message: Message): void {
  if (message.role === Role.ROLE_UNSPECIFIED || message.role === undefined) throw new RequestMalformedError("message.role is required: ROLE_USER (\"user\" in A2A 0.3) for a client's message");
  if (message.role !== Role.ROLE_USER) throw new RequestMalformedError("message.role must be ROLE_USER (\"user\" in A2A 0.3): a message sent to an agent is the user's");
  if (!Array.isArray(message.parts) || message.parts.length === 0) throw new RequestMalformedError("message.parts is empty: say what to do in a text part");
  message.parts.forEach((part, index) => {
    if (!part?.content) throw new RequestMalformedError(`message.parts[${index}] holds nothing: a part is text, data, raw bytes or a url`);
  });
  const file = message.parts.find((part) => part.content?.$case === "raw" || part.content?.$case === "url");
  if (file) {
    const what = file.content?.$case === "url" ? "a file by URL" : `raw bytes${file.mediaType ? ` (${file.mediaType})` : ""}`;
    throw new ContentTypeNotSupportedError(`troupe takes text and data parts (text/plain, application/json), not ${what}: put what the task needs in text or data`);
  }
}

/**
 * A reply to a waiting run: a data part `{ decision, feedback?, answer? }` when there is one, else
 * the text. At a tool server's question (mcp-elicitation) a data part without a decision is the
 * form's content.
 */
function replyOf(message: Message, kind: InterruptKind): PersonReply | string {
  for (const value of dataOf(message.parts)) {
    if (kind === "mcp-elicitation" && typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as PersonReply).decision !== "string") {
      return { decision: "answer", answer: JSON.stringify(value) };
    }
    if (typeof value === "object" && value !== null && typeof (value as PersonReply).decision === "string") {
      const { decision, feedback, answer } = value as PersonReply;
      return { decision, ...(typeof feedback === "string" ? { feedback } : {}), ...(typeof answer === "string" ? { answer } : {}) };
    }
  }
  return textOf(message.parts);
}

/**
 * A TroupeError from the task service, as the A2A error a client reads: a missing thread or task
 * is not found, a conflict an unsupported operation, bad input malformed; anything else (the
 * server stopping, a store failure) is the server's, an internal error that says what happened.
 */
function protocolError(error: unknown): Error {
  if (error instanceof A2AError) return error;
  if (isTroupeError(error)) {
    if (error.kind === "not_found") return new TaskNotFoundError(error.message);
    if (error.kind === "conflict") return new UnsupportedOperationError(error.message);
    if (error.kind === "input") return new RequestMalformedError(`${error.code}: ${error.message}`);
    return new A2AError(`${error.code}: ${error.message}`);
  }
  return error instanceof Error ? error : new Error(errorMessage(error));
}

/**
 * The run options a new message carries in `metadata.troupe` (snake_case, as REST's body takes
 * them: run-request-wire.ts's A2aRunOptions, every run option but those the message says itself);
 * a bad one is refused by name before anything is created.
 */
function runOptionsOf(message: Message): A2aRunOptions {
  const options: unknown = message.metadata?.troupe;
  if (options === undefined) return {};
  try {
    return parseRequestPart(A2aRunOptions, options);
  } catch (error) {
    if (isTroupeError(error)) throw new RequestMalformedError(`${error.code}: metadata.troupe: ${error.message}`);
    throw error;
  }
}

/** The idempotency key of a message: its id, the sender's own (another key's same id is another message). */
function idempotencyKeyOf(principal: Principal, messageId: string): string {
  return `a2a-${createHash("sha256").update(`${principal.id}\n${messageId}`).digest("hex").slice(0, 40)}`;
}

/** A message to a task: an answer when its run waits for a person, else it joins the run. Checked before anything changes. */
async function toTask(feed: RunFeed, principal: Principal, message: Message): Promise<MessageIntent> {
  const { tasks } = feed;
  const record = await tasks.record(principal, message.taskId);
  const contextId = threadNameOfRun(record);
  if (message.contextId && message.contextId !== contextId) {
    throw new RequestMalformedError(`contextId ${message.contextId} is not task ${record.id}'s context (${contextId}): send the message with the task's contextId, or without one`);
  }
  if (TERMINAL_STATES.has(taskStateOf(record, false))) {
    throw new UnsupportedOperationError(
      `task ${record.id} has ended (${record.status}) and takes no more messages: to go on with its conversation, send a new message (no taskId) with contextId ${contextId}`,
    );
  }
  const after = await lastEventSeq(feed, record.id);
  if (record.status === "interrupted" && record.interrupt && !tasks.isActive(record.id)) {
    await tasks.resume(principal, record.id, resumeBodyOf(record.interrupt.kind, replyOf(message, record.interrupt.kind)));
    return { kind: "answer", runId: record.id, after };
  }
  return { kind: "follow", runId: record.id, after };
}

/** A message without a task: a new run, submitted under the message's id as its idempotency key. */
async function newRun(feed: RunFeed, principal: Principal, message: Message): Promise<MessageIntent> {
  const { tasks } = feed;
  const task = textOf(message.parts);
  if (task.trim() === "") throw new RequestMalformedError("the message has no text: say what to do in a text part");
  if (task.length > LIMITS.taskMaxChars * 2) throw new RequestMalformedError(`the task is longer than ${LIMITS.taskMaxChars} characters`);
  const data = dataOf(message.parts);
  if (message.contextId && !ThreadId.safeParse(message.contextId).success) {
    throw new RequestMalformedError("contextId must be 1-128 letters, digits, '.', '_', ':' or '-' (it names the troupe thread)");
  }
  const body = parseRequestPart(ExecuteBody, {
    ...runOptionsOf(message),
    task,
    ...(data.length > 0 ? { context: JSON.stringify(data.length === 1 ? data[0] : data) } : {}),
    ...(message.contextId ? { thread_id: message.contextId } : {}),
  });
  const idempotencyKey = idempotencyKeyOf(principal, message.messageId);
  if (body.thread_id !== undefined) {
    let previous: RunRecord | undefined;
    try {
      previous = await tasks.latestOfThread(principal, body.thread_id);
    } catch (error) {
      if (isTroupeError(error) && error.code === "thread_not_found") throw new TaskNotFoundError(`there is no context ${body.thread_id} of yours; use another contextId`);
      throw error;
    }
    // A task still going on the context: the new one waits its turn (as a REST submission does by
    // default). One waiting for a person: the message was most likely meant as the answer.
    if (previous && previous.status === "interrupted" && previous.interrupt && previous.idempotencyKey !== idempotencyKey) {
      throw new UnsupportedOperationError(`context ${body.thread_id} has task ${previous.id}, which waits for a person: answer it with a message that names its taskId (or cancel it), or use another contextId`);
    }
  }
  let submitted: { record: RunRecord; replayed: boolean };
  try {
    submitted = await tasks.submit(principal, body, idempotencyKey, {});
  } catch (error) {
    if (isTroupeError(error) && error.code === "idempotency_key_reused") {
      const earlier = typeof error.data.task_id === "string" ? ` (task ${error.data.task_id})` : "";
      throw new RequestMalformedError(`messageId ${message.messageId} was already sent with another message${earlier}: give each new message its own messageId (a repeat of the same message returns its task)`);
    }
    throw error;
  }
  return { kind: "start", runId: submitted.record.id, after: submitted.replayed ? await lastEventSeq(feed, submitted.record.id) : 0 };
}

/**
 * Works out what a message asks, checks it, and does it (submits the run, or answers the one that
 * waits): every refusal is the A2A error a client should see, thrown before anything is created
 * or changed. A message id sent again with the same message is the same run; with another
 * message, a protocol error (the id is the sender's idempotency key, durable, per API key).
 */
export async function acceptMessage(feed: RunFeed, principal: Principal, message: Message): Promise<MessageIntent> {
  try {
    checkMessageShape(message);
    return message.taskId ? await toTask(feed, principal, message) : await newRun(feed, principal, message);
  } catch (error) {
    throw protocolError(error);
  }
}
