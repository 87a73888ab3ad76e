import { interrupt, task } from "@langchain/langgraph";
import type { RemoteQuestion } from "../agents/remote-worker.js";
import type { DurableStep } from "../agents/agent-loop.js";
import { elicitationDecision } from "../core/elicitation-answer.js";
import type { ElicitationAnswer, ElicitationQuestion } from "../core/elicitation.js";
import { ResumeDecision } from "../core/run.js";
import type { ApprovalAnswer, ApprovalRequest } from "../tools/define-tool.js";

/**
 * A worker step as a LangGraph task inside its subtask's task. A node that pauses
 * (`interrupt()`, a tool waiting for approval) runs again from its start when the run resumes;
 * LangGraph then hands back the saved results of the tasks that had finished instead of running
 * them, so model calls and tool calls made before the pause are not repeated — after a crash
 * too. A task that throws fails the whole superstep, so work returns its failures as values;
 * only a pause or a cancellation passes as a throw (then nothing is saved).
 */
export const durableStep: DurableStep = async <T>(name: string, work: () => Promise<T>, keep?: (value: T) => T) => {
  let ran = false;
  let live: { value: T } | undefined;
  const value = await task(name, async () => {
    ran = true;
    const done = await work();
    live = { value: done };
    return keep ? keep(done) : done;
  })();
  // The caller gets what its work returned; the checkpoint keeps what `keep` made of it.
  return { value: live ? live.value : (value as T), replayed: !ran };
};

/** Steps that run at once until `harden`, then become durable (see `createDeferredSteps`). */
export interface DeferredSteps {
  step: DurableStep;
  /** Saves every step so far as a LangGraph task, in order, and makes every later one durable. */
  harden(): Promise<void>;
}

/**
 * Steps for a worker that may, but rarely does, wait for a person: a call steered by untrusted
 * data. They run at once, each kept in memory, and cost no checkpoint writes — until the
 * worker is about to make a call that will ask a person; it then calls `harden`, which saves
 * every step so far as the durable tasks they would have been (same names, same order), and
 * every later step is durable. On the pass after the resume the subtask's durable start step
 * comes back replayed, which says its steps were saved: it hardens at once (nothing logged yet),
 * so every step is durable from the start and each saved one is replayed, none repeated.
 */
export function createDeferredSteps(): DeferredSteps {
  const log: Array<{ name: string; kept: () => unknown }> = [];
  let durable = false;
  return {
    step: async <T>(name: string, work: () => Promise<T>, keep?: (value: T) => T) => {
      if (durable) return durableStep(name, work, keep);
      const value = await work();
      log.push({ name, kept: () => (keep ? keep(value) : value) });
      return { value, replayed: false };
    },
    harden: async () => {
      if (durable) return;
      durable = true;
      for (const entry of log.splice(0)) await task(entry.name, async () => entry.kept())();
    },
  };
}

/**
 * Asks a person to approve a high-risk tool call by interrupting the run. On resume LangGraph
 * returns the person's decision here; `troupe resume <thread> --approve | --reject`.
 */
export function approvalByInterrupt(request: ApprovalRequest): ApprovalAnswer {
  const parsed = ResumeDecision.safeParse(interrupt({ kind: "tool-approval", payload: { ...request } }));
  if (!parsed.success) return { approved: false, feedback: "the resume value was not a valid decision" };
  const decision = parsed.data;
  switch (decision.decision) {
    case "approve":
      return { approved: true };
    case "reject":
      return decision.feedback ? { approved: false, feedback: decision.feedback } : { approved: false };
    case "answer":
      return { approved: false, feedback: decision.answer };
    default:
      return { approved: false, feedback: `"${decision.decision}" is not an answer to an approval` };
  }
}

const APPROVAL_KINDS = new Set(["plan-approval", "answer-approval", "tool-approval"]);

/**
 * Puts a remote agent's question to a person by interrupting the run, as troupe's own approval:
 * an approval the agent asks for (a troupe peer says which) waits for approve or reject, anything
 * else for an answer. The person's decision comes back here on resume and goes to the agent.
 */
export function remoteInputByInterrupt(question: RemoteQuestion): ResumeDecision {
  const approval = question.kind !== undefined && APPROVAL_KINDS.has(question.kind);
  const payload = {
    tool: question.tool,
    agent: question.agent,
    question: question.question,
    remoteTaskId: question.taskId,
    ...(question.kind ? { remoteKind: question.kind } : {}),
    ...(question.payload ? { remotePayload: question.payload } : {}),
    ...(approval ? { args: {}, reason: `the remote agent ${question.agent} asks for a person's approval` } : {}),
  };
  const parsed = ResumeDecision.safeParse(interrupt({ kind: approval ? "tool-approval" : "question", payload }));
  return parsed.success ? parsed.data : { decision: "reject", feedback: "the resume value was not a valid decision" };
}

/**
 * Puts a tool server's question (MCP elicitation) to a person by interrupting the run, as its own
 * kind: never an approval, so its words cannot pass for one of troupe's. On resume LangGraph
 * returns the person's answer here, already checked against the form at the door it came through
 * (`elicitationDecision`); a decision of another shape is read the same way, and one that still
 * does not fit declines.
 */
export function elicitationByInterrupt(question: ElicitationQuestion): ElicitationAnswer {
  const payload = { ...question } as unknown as Record<string, unknown>;
  const parsed = ResumeDecision.safeParse(interrupt({ kind: "mcp-elicitation", payload }));
  if (!parsed.success) return { action: "decline", fingerprint: question.fingerprint };
  try {
    const decided = elicitationDecision(payload, parsed.data);
    return { action: decided.action, fingerprint: decided.fingerprint, ...(decided.content ? { content: decided.content } : {}) };
  } catch {
    return { action: "decline", fingerprint: question.fingerprint };
  }
}
