import type { PlannedSubtask } from "../core/plan.js";
import type { ResumeDecision } from "../core/run.js";
import { preview, truncate } from "../core/text.js";
import type { ToolOutcome } from "../tools/define-tool.js";
import type { RemoteCallValue } from "../tools/a2a/remote-agent.js";
import type { AgentDefinition } from "./define-agent.js";
import type { UsageMeter } from "./model-call.js";
import type { RunLedger } from "./run-ledger.js";
import type { DurableStep } from "./agent-loop.js";

/** Messages one subtask may exchange with a remote agent (the first, and the answers to its questions). */
const MAX_TURNS = 6;

/** A remote agent's question, put to a person. */
export interface RemoteQuestion {
  agent: string;
  tool: string;
  taskId: string;
  question: string;
  /** What kind of question the agent says it is (a troupe peer: plan-approval, tool-approval, question…). */
  kind?: string;
  payload?: Record<string, unknown>;
}

export interface RemoteWorkerInput {
  agent: AgentDefinition & { remote: NonNullable<AgentDefinition["remote"]> };
  subtask: PlannedSubtask;
  args: Record<string, unknown>;
  /** Sends a message through the agent's tool (the registry: permission, approval, audit, timeout), with the turn's call id. */
  call: (args: Record<string, unknown>, turn: number) => Promise<{ outcome: ToolOutcome; durationMs: number }>;
  /** Told of every call, replayed ones too (the trace). */
  onCall: (call: { tool: string; args: Record<string, unknown>; outcome: ToolOutcome; durationMs: number }, replayed: boolean) => Promise<void> | void;
  step: DurableStep;
  /** Asks a person and returns the answer (the graph pauses the run); absent for a map's item, which cannot wait. */
  ask?: (question: RemoteQuestion) => ResumeDecision;
  meter: UsageMeter;
  ledger?: RunLedger;
}

export interface RemoteWorkerOutcome {
  status: "done" | "failed";
  value?: unknown;
  exact?: boolean;
  summary: string;
  error?: string;
  failureKind?: "error" | "rejected";
}

/** A result in a line: the agent's text, and the files it sent by name. */
function summaryOf(result: unknown): string {
  if (typeof result === "string") return truncate(result.replace(/\s+/g, " "), 300);
  const { text, files } = (result ?? {}) as { text?: unknown; files?: Array<{ name?: unknown; bytes?: unknown }> };
  if (typeof text !== "string" || !Array.isArray(files)) return preview(result, 300);
  const names = files.map((file) => `${String(file.name)} (${String(file.bytes)} bytes)`).join(", ");
  return truncate(`${text.replace(/\s+/g, " ")}${names ? ` · files: ${names}` : ""}`, 300);
}

/** The message a subtask becomes: its label, with its arguments as a preview in words and whole as a data part. */
function firstMessage(subtask: PlannedSubtask, args: Record<string, unknown>): Record<string, unknown> {
  const hasArgs = Object.keys(args).length > 0;
  const text = hasArgs ? `${subtask.label}\n\nInputs (also sent whole as a data part): ${preview(args, 1_500)}` : subtask.label;
  return hasArgs ? { text, data: args } : { text };
}

/** A person's answer as the reply message: words for any agent, a data part for a troupe peer. */
function replyMessage(decision: ResumeDecision, asked: RemoteCallValue & { state: "input-required" }): Record<string, unknown> {
  const about = { taskId: asked.taskId, contextId: asked.contextId };
  switch (decision.decision) {
    case "approve":
      return { text: "approve", data: { decision: "approve" }, ...about };
    case "reject":
      return { text: decision.feedback ? `reject: ${decision.feedback}` : "reject", data: { decision: "reject", ...(decision.feedback ? { feedback: decision.feedback } : {}) }, ...about };
    case "answer":
      return { text: decision.answer, data: { decision: "answer", answer: decision.answer }, ...about };
    default:
      return { text: "reject: the person's decision did not answer the question", data: { decision: "reject" }, ...about };
  }
}

/**
 * A subtask worked by a remote agent over A2A: the subtask goes as a message (through the agent's
 * tool, so it is permitted, approved when its risk asks for it, audited and timed like a tool
 * call), and the task it makes comes back as the subtask's result — the agent's text, data and
 * files, handed on as they came. When the agent asks for input, the person is asked (the run
 * pauses like for an approval) and their answer goes back on the same task. Each message is a
 * durable step, so a resume after a pause or a crash repeats none, and waits on the same remote
 * task. The usage the agent reports counts in the run's metrics and budget.
 */
export async function runRemoteAgent(input: RemoteWorkerInput): Promise<RemoteWorkerOutcome> {
  const { agent, step } = input;
  let args = firstMessage(input.subtask, input.args);
  for (let turn = 1; turn <= MAX_TURNS; turn += 1) {
    const callArgs = args;
    input.ledger?.check();
    const { value: made, replayed } = await step("remote_call", () => input.call(callArgs, turn));
    await input.onCall({ tool: agent.remote.tool, args: callArgs, outcome: made.outcome, durationMs: made.durationMs }, replayed);
    const { outcome } = made;
    if (!outcome.ok) {
      const rejected = outcome.error.code === "rejected";
      return { status: "failed", summary: "", error: `${outcome.error.code}: ${outcome.error.message}`, failureKind: rejected ? "rejected" : "error" };
    }
    const value = outcome.value as RemoteCallValue;
    if (value.usage) {
      // Replayed or not: the run's ledger and this node's metrics start without what the agent spent.
      input.meter.add(value.usage);
      input.ledger?.carry(value.usage);
    }
    if (value.state === "completed") {
      const summary = summaryOf(value.result);
      return { status: "done", value: value.result, exact: true, summary: summary || "done" };
    }
    if (!input.ask) {
      return { status: "failed", summary: "", error: `the remote agent ${agent.name} asks for input (${truncate(value.question, 300)}), and an item of a map cannot wait for a person`, failureKind: "error" };
    }
    const decision = input.ask({ agent: agent.name, tool: agent.remote.tool, taskId: value.taskId, question: value.question, ...(value.kind ? { kind: value.kind } : {}), ...(value.payload ? { payload: value.payload } : {}) });
    args = replyMessage(decision, value);
  }
  return { status: "failed", summary: "", error: `the remote agent ${agent.name} asked for input ${MAX_TURNS - 1} times; troupe stops answering`, failureKind: "error" };
}
