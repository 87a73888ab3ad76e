import { createHash } from "node:crypto";
import type { Message, Part } from "@a2a-js/sdk";
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { errorMessage, isTroupeError } from "../../core/errors.js";
import { LIMITS } from "../../core/limits.js";
import type { InterruptKind } from "../../core/run.js";
import type { Principal } from "../config.js";
import { type PersonReply, resumeBodyOf } from "../interrupt-prompt.js";
import { ExecuteBody, type ResumeBody, ThreadId } from "../schemas.js";
import type { TaskService } from "../task-service.js";
import { parseRequestPart } from "../validation.js";

/**
 * What an A2A message asks of troupe, worked out (and checked) before the SDK makes a task of it,
 * so a bad message is a protocol error and nothing is created: a new run on a thread (the
 * message's text is the task, its data parts the context), an answer to a run that waits for a
 * person, or a message to a run that is going (nothing to do but follow it).
 */
export type MessageIntent =
  | { kind: "start"; body: ExecuteBody; idempotencyKey: string }
  | { kind: "answer"; runId: string; body: ResumeBody }
  | { kind: "follow"; runId: string };

/** Where the intent travels from the request handler to the executor. */
export const INTENT_KEY = "troupe.intent";

function textOf(parts: readonly Part[]): string {
  return parts.flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : [])).join("\n");
}

function dataOf(parts: readonly Part[]): unknown[] {
  return parts.flatMap((part) => (part.content?.$case === "data" ? [part.content.value] : []));
}

function refuseFiles(parts: readonly Part[]): void {
  const file = parts.find((part) => part.content?.$case === "raw" || part.content?.$case === "url");
  if (file) throw new RequestMalformedError("troupe takes text and data parts; a file part (raw bytes or a URL) is not accepted: put what the task needs in text or data");
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

/** A TroupeError from the task service, as the A2A error a client reads (a missing thread or task is not found; the rest malformed). */
function protocolError(error: unknown): Error {
  if (isTroupeError(error)) {
    if (error.kind === "not_found") return new TaskNotFoundError(error.message);
    if (error.kind === "conflict") return new UnsupportedOperationError(error.message);
    return new RequestMalformedError(`${error.code}: ${error.message}`);
  }
  return error instanceof Error ? error : new Error(errorMessage(error));
}

/** Works out and checks what a message asks; throws the A2A error a client should see. */
export async function intentOf(tasks: TaskService, principal: Principal, message: Message): Promise<MessageIntent> {
  try {
    refuseFiles(message.parts ?? []);
    if (message.taskId) {
      const record = await tasks.record(principal, message.taskId);
      if (record.status === "interrupted" && record.interrupt && !tasks.isActive(record.id)) {
        return { kind: "answer", runId: record.id, body: resumeBodyOf(record.interrupt.kind, replyOf(message, record.interrupt.kind)) };
      }
      return { kind: "follow", runId: record.id };
    }
    const task = textOf(message.parts ?? []);
    if (task.trim() === "") throw new RequestMalformedError("the message has no text: say what to do in a text part");
    if (task.length > LIMITS.taskMaxChars * 2) throw new RequestMalformedError(`the task is longer than ${LIMITS.taskMaxChars} characters`);
    const data = dataOf(message.parts ?? []);
    if (message.contextId && !ThreadId.safeParse(message.contextId).success) {
      throw new RequestMalformedError("contextId must be 1-128 letters, digits, '.', '_', ':' or '-' (it names the troupe thread)");
    }
    const body = parseRequestPart(ExecuteBody, {
      task,
      ...(data.length > 0 ? { context: JSON.stringify(data.length === 1 ? data[0] : data) } : {}),
      ...(message.contextId ? { thread_id: message.contextId } : {}),
    });
    const idempotencyKey = `a2a-${createHash("sha256").update(`${principal.id}\n${message.messageId}`).digest("hex").slice(0, 40)}`;
    if (body.thread_id !== undefined) {
      let previous;
      try {
        previous = await tasks.latestOfThread(principal, body.thread_id);
      } catch (error) {
        if (isTroupeError(error) && error.code === "thread_not_found") throw new TaskNotFoundError(`there is no context ${body.thread_id} of yours; use another contextId`);
        throw error;
      }
      if (previous && (previous.status === "interrupted" || previous.status === "queued" || previous.status === "running") && previous.idempotencyKey !== idempotencyKey) {
        throw new UnsupportedOperationError(`context ${body.thread_id} has task ${previous.id}, which is ${previous.status}: send the message with its taskId, or use another contextId`);
      }
    }
    return { kind: "start", body, idempotencyKey };
  } catch (error) {
    throw protocolError(error);
  }
}
