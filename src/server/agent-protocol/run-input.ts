import { fieldErrorCode } from "../../core/error-codes.js";
import { InputError } from "../../core/errors.js";
import type { InterruptKind } from "../../core/run.js";
import type { PendingInterrupt } from "../../runtime/engine.js";
import { resumeBodyOf } from "../interrupt-prompt.js";
import { ExecuteBody } from "../run-request-wire.js";
import { ResumeBody } from "../schemas.js";
import { parseRequestPart } from "../validation.js";
import { type RunCreate, RunSettings } from "./wire.js";

/**
 * What a protocol run asks for, in troupe's terms: the task a run's input carries (its `task`, or
 * the text of the last human message, as Agent Chat UI sends it), troupe's run settings from
 * `context` (or `config.configurable`), and a `Command`'s `resume` as the REST API's resume body.
 */

const RUN_SETTING_KEYS = Object.keys(RunSettings.shape);

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new InputError(fieldErrorCode("input", "invalid"), "a message's content is text, or a list of content blocks");
  return content
    .map((block) => {
      if (typeof block === "string") return block;
      const typed = block as { type?: unknown; text?: unknown };
      if (typed && typeof typed === "object" && typed.type === "text" && typeof typed.text === "string") return typed.text;
      throw new InputError("agent_protocol_unsupported", `troupe takes text: a message's ${String(typed?.type ?? "unknown")} block cannot be part of a task`, { block_type: String(typed?.type ?? "unknown") });
    })
    .join("\n");
}

/** The task of a run's input: `task`, or the last human (user) message's text. */
export function taskOf(input: NonNullable<RunCreate["input"]>): string {
  if (input.task !== undefined) {
    if (input.messages !== undefined) throw new InputError("agent_protocol_unsupported", "give the task as input.task or as a human message in input.messages, not both");
    return input.task;
  }
  const messages = input.messages === undefined ? [] : Array.isArray(input.messages) ? input.messages : [input.messages];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (typeof message === "string") return message;
    const kind = (message?.type ?? message?.role ?? "").toLowerCase();
    if (kind === "human" || kind === "user" || kind === "humanmessage" || kind === "humanmessagechunk") return textOf(message?.content);
  }
  throw new InputError(
    "agent_protocol_unsupported",
    "the run's input holds no task: send input.task, or input.messages with a human message (earlier turns come from the thread)",
    { field: "input" },
  );
}

/** troupe's run settings: `context` (checked, an unknown key refused), over `config.configurable`'s keys troupe knows. */
function settingsOf(body: RunCreate): RunSettings {
  const configurable = body.config?.configurable ?? {};
  const fromConfig = Object.fromEntries(Object.entries(configurable).filter(([key]) => RUN_SETTING_KEYS.includes(key)));
  const context = body.context ?? {};
  const unknown = Object.keys(context).filter((key) => !RUN_SETTING_KEYS.includes(key));
  if (unknown.length > 0) {
    throw new InputError("unknown_field", `context takes troupe's run settings (${RUN_SETTING_KEYS.join(", ")}); not ${unknown.join(", ")}`, { field: "context", fields: unknown });
  }
  return parseRequestPart(RunSettings, { ...fromConfig, ...context });
}

/** The REST submission a protocol run with input makes. */
export function executeBodyOf(body: RunCreate, input: NonNullable<RunCreate["input"]>, threadName: string | undefined): ExecuteBody {
  const settings = settingsOf(body);
  const request: Record<string, unknown> = {
    task: taskOf(input),
    ...settings,
    on_busy: body.multitask_strategy ?? "reject",
  };
  // Agent Chat UI's input carries what the person is looking at as `context`; the run's own setting wins.
  if (request.context === undefined && input.context !== undefined) request.context = input.context;
  if (threadName !== undefined) request.thread_id = threadName;
  if (body.webhook) request.webhook = { url: body.webhook };
  return parseRequestPart(ExecuteBody, request);
}

type Decision =
  | { decision: "approve" }
  | { decision: "reject"; feedback?: string }
  | { decision: "edit"; plan?: unknown; answer?: string }
  | { decision: "answer"; answer: string }
  | { decision: "answer"; content: Record<string, unknown> };

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** A decision of LangChain's human-in-the-loop middleware (`{ type: approve | edit | reject }`) or Agent Inbox's (`accept | edit | respond | ignore`). */
function fromReview(kind: InterruptKind, review: unknown): Decision {
  if (!isObject(review)) throw new InputError("decision_invalid", "a decision is an object with a type: approve, edit or reject");
  const type = String(review.type ?? "");
  const args = isObject(review.edited_action) ? review.edited_action.args : review.args;
  const message = typeof review.message === "string" ? review.message : typeof review.args === "string" ? review.args : undefined;
  switch (type) {
    case "approve":
    case "accept":
      return { decision: "approve" };
    case "reject":
    case "ignore":
      return message ? { decision: "reject", feedback: message } : { decision: "reject" };
    case "respond":
    case "response":
      if (kind === "question") return { decision: "answer", answer: message ?? "" };
      return message ? { decision: "reject", feedback: message } : { decision: "reject" };
    case "edit": {
      const edited = isObject(args) ? args : {};
      if (kind === "plan-approval") return { decision: "edit", plan: edited.plan };
      if (kind === "answer-approval") return { decision: "edit", answer: typeof edited.answer === "string" ? edited.answer : "" };
      if (kind === "question") return { decision: "answer", answer: typeof edited.answer === "string" ? edited.answer : "" };
      if (kind === "mcp-elicitation") return { decision: "answer", content: isObject(edited.content) ? edited.content : {} };
      throw new InputError("decision_invalid", "a tool call waiting for approval takes approve or reject, not edit");
    }
    default:
      throw new InputError("decision_invalid", `unknown decision type ${JSON.stringify(type).slice(0, 40)}: send approve, edit or reject`);
  }
}

/** A resume value as a decision, for the kind of wait it answers. */
function decisionOf(kind: InterruptKind, value: unknown): Decision {
  if (value === true) return { decision: "approve" };
  if (value === false) return { decision: "reject" };
  if (typeof value === "string") return resumeBodyOf(kind, value) as Decision;
  if (Array.isArray(value)) {
    if (value.length !== 1) throw new InputError("decision_invalid", `send one decision for the one request the run waits on (got ${value.length})`);
    return fromReview(kind, value[0]);
  }
  if (isObject(value)) {
    if (Array.isArray(value.decisions)) {
      if (value.decisions.length !== 1) throw new InputError("decision_invalid", `send one decision for the one request the run waits on (got ${value.decisions.length})`);
      return fromReview(kind, value.decisions[0]);
    }
    if (typeof value.decision === "string") return value as Decision;
    if (typeof value.answer === "string") return { decision: "answer", answer: value.answer };
    if (kind === "mcp-elicitation" && isObject(value.content)) return { decision: "answer", content: value.content };
  }
  throw new InputError(
    "decision_invalid",
    "command.resume is: true or false; words (approve, reject: why, or the answer to a question); { decision, feedback, answer, plan }; or LangChain's { decisions: [{ type: approve | edit | reject }] }",
  );
}

/**
 * A `Command`'s resume as troupe's resume body. The value answers the first interrupt the run
 * waits on, or — LangGraph's map from interrupt id to value — the one it names (one at a time:
 * the others are asked again when the run pauses next).
 */
export function resumeBodyFor(resume: unknown, pending: readonly PendingInterrupt[], waitingFor: InterruptKind): ResumeBody {
  if (resume === undefined) throw new InputError("command_invalid", "command.resume is missing: send the answer to what the run waits for");
  let target: PendingInterrupt | undefined;
  let value: unknown = resume;
  if (isObject(resume) && pending.length > 0) {
    const keys = Object.keys(resume);
    const named = keys.filter((key) => pending.some((candidate) => candidate.id === key));
    if (named.length > 0) {
      if (keys.length > 1) throw new InputError("command_invalid", "answer one interrupt at a time: the others are asked again when the run pauses next", { interrupt_ids: pending.map((candidate) => candidate.id) });
      target = pending.find((candidate) => candidate.id === named[0]);
      value = resume[named[0] as string];
    }
  }
  const kind = target?.kind ?? pending[0]?.kind ?? waitingFor;
  let decision = decisionOf(kind, value);
  if (kind !== "question" && kind !== "mcp-elicitation" && decision.decision === "answer") throw new InputError("decision_invalid", `the run waits for ${kind}: approve, reject (with feedback)${kind === "tool-approval" ? "" : " or edit"}`);
  if ((kind === "question" || kind === "mcp-elicitation") && decision.decision === "edit") decision = { decision: "answer", answer: decision.answer ?? "" };
  return parseRequestPart(ResumeBody, { ...decision, ...(target ? { interrupt_id: target.id } : {}) });
}
