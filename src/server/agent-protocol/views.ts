import { v5 } from "@langchain/core/utils/uuid";
import type { InterruptInfo, RunStatus, StopReason } from "../../core/run.js";
import type { AgentThreadStatus, RunRecord } from "../../store/index.js";
import { describeInterrupt } from "../interrupt-prompt.js";

/**
 * How troupe's runs look in the Agent Protocol: the one assistant, run and thread statuses,
 * a thread's turns as LangChain message dicts, a waiting run's question as a LangGraph interrupt
 * (with LangChain's human-in-the-loop request, so Agent Chat UI draws its approve/edit/reject
 * form), and the `values` of a thread's state. Pure: the routes read, these shape.
 */

export const GRAPH_ID = "troupe";
/** LangGraph names a graph's default assistant uuid5(graph id, this namespace); so does troupe. */
const NAMESPACE_GRAPH = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";
export const ASSISTANT_ID = v5(GRAPH_ID, NAMESPACE_GRAPH);
/** The metadata every troupe thread has unless it was given its own: the graph it runs. */
export const GRAPH_METADATA = { graph_id: GRAPH_ID, assistant_id: ASSISTANT_ID } as const;
/** How many of a thread's latest runs its `values.messages` hold (two messages each). */
export const TURNS_SHOWN = 50;

/** Whether an assistant id names troupe's assistant (its graph id or its uuid). */
export function isTroupeAssistant(id: string): boolean {
  return id === GRAPH_ID || id.toLowerCase() === ASSISTANT_ID;
}

export type ProtocolRunStatus = "pending" | "running" | "error" | "success" | "timeout" | "interrupted";

/**
 * A run's status as LangGraph names it. A run waiting for a person has ended its segment at an
 * interrupt: `success`, as LangGraph reports a run that stopped at an interrupt (its thread is
 * `interrupted`); a Command resume takes the same run up again (`pending`, then `running`). A
 * cancelled run is `interrupted`, LangGraph's word for a run stopped from outside.
 */
export function runStatusOf(record: Pick<RunRecord, "status" | "suspended">): ProtocolRunStatus {
  switch (record.status) {
    case "queued":
      return "pending";
    case "running":
      return "running";
    case "interrupted":
      return record.suspended !== null ? "running" : "success";
    case "completed":
      return "success";
    case "failed":
      return "error";
    case "cancelled":
      return "interrupted";
  }
}

/** The troupe statuses a protocol run status covers (for run listings). */
export function troupeStatusesOf(status: ProtocolRunStatus): RunStatus[] {
  switch (status) {
    case "pending":
      return ["queued"];
    case "running":
      return ["running"];
    case "success":
      return ["completed", "interrupted"];
    case "error":
      return ["failed"];
    case "interrupted":
      return ["cancelled"];
    case "timeout":
      return [];
  }
}

/** A thread's status from its latest run (the store's SQL says the same for listings). */
export function threadStatusOf(latest: Pick<RunRecord, "status" | "suspended"> | undefined): AgentThreadStatus {
  if (!latest) return "idle";
  if (latest.status === "queued" || latest.status === "running") return "busy";
  if (latest.status === "interrupted") return latest.suspended !== null ? "busy" : "interrupted";
  return latest.status === "failed" ? "error" : "idle";
}

export const iso = (ms: number): string => new Date(ms).toISOString();

export type MessageDict = Record<string, unknown> & { type: "human" | "ai"; id: string; content: string };

/** The id of a run's human message (its task) and AI message (its answer). */
export const humanMessageId = (runId: string): string => `${runId}-task`;
export const aiMessageId = (runId: string): string => `${runId}-answer`;

export function humanMessage(runId: string, task: string): MessageDict {
  return { type: "human", id: humanMessageId(runId), content: task, additional_kwargs: {}, response_metadata: {} };
}

export function aiMessage(runId: string, answer: string, status?: string): MessageDict {
  return { type: "ai", id: aiMessageId(runId), content: answer, additional_kwargs: {}, response_metadata: status ? { troupe_status: status } : {}, tool_calls: [], invalid_tool_calls: [] };
}

/** A run as a turn of the conversation: its task, and its answer once it has one. */
export interface Turn {
  runId: string;
  task: string;
  answer: string | null;
  status: string;
}

export function turnMessages(turns: readonly Turn[]): MessageDict[] {
  return turns.flatMap((turn) => [humanMessage(turn.runId, turn.task), ...(turn.answer !== null ? [aiMessage(turn.runId, turn.answer, turn.status)] : [])]);
}

/** A subtask in `values.plan`: as planned, with its status. */
export interface PlanEntry {
  id: string;
  label: string;
  agent: string;
  depends_on: string[];
  status: string;
}

/** A subtask's outcome in `values.results`. */
export interface ResultEntry {
  status: string;
  summary?: string;
  error?: string;
}

/** What a thread's `values` hold: its latest run's task, plan, results and answer, and the conversation. */
export interface ProtocolValues extends Record<string, unknown> {
  messages: MessageDict[];
  run_id: string | null;
  task: string | null;
  plan: PlanEntry[];
  results: Record<string, ResultEntry>;
  answer: string | null;
  status: string | null;
  stop_reason: StopReason | null;
}

export function emptyValues(): ProtocolValues {
  return { messages: [], run_id: null, task: null, plan: [], results: {}, answer: null, status: null, stop_reason: null };
}

/** A plan entry from a subtask as troupe plans it. */
export function planEntry(subtask: { id: string; label: string; agent: string; dependsOn?: string[] }, status: string): PlanEntry {
  return { id: subtask.id, label: subtask.label, agent: subtask.agent, depends_on: subtask.dependsOn ?? [], status };
}

/** The human-in-the-loop request LangChain's middleware raises (and Agent Chat UI draws) for each kind of wait. */
function reviewRequest(interrupt: InterruptInfo, question: string): Record<string, unknown> {
  const payload = interrupt.payload;
  const request = (name: string, args: Record<string, unknown>, allowed: string[]) => ({
    action_requests: [{ name, args, description: question }],
    review_configs: [{ action_name: name, allowed_decisions: allowed }],
  });
  switch (interrupt.kind) {
    case "plan-approval":
      return request("approve_plan", { plan: Array.isArray(payload.plan) ? payload.plan : [] }, ["approve", "edit", "reject"]);
    case "answer-approval":
      return request("approve_answer", { answer: String(payload.answer ?? "") }, ["approve", "edit", "reject"]);
    case "tool-approval": {
      const args = payload.args !== null && typeof payload.args === "object" && !Array.isArray(payload.args) ? (payload.args as Record<string, unknown>) : { args: payload.args ?? null };
      return request(String(payload.tool ?? "tool"), args, ["approve", "reject"]);
    }
    case "question":
      return request("answer_question", { question: String(payload.question ?? ""), answer: "" }, ["edit", "reject"]);
    case "mcp-elicitation":
      // A tool server's own question (untrusted words): answered by editing `content` to fit the form, or declined.
      return request("answer_mcp_server", { server: String(payload.server ?? ""), message: String(payload.message ?? ""), requested_schema: payload.requestedSchema ?? {}, content: {} }, ["edit", "reject"]);
  }
}

/** A run's wait for a person as a LangGraph interrupt: its kind, the question in words, what it is about, and the review request. */
export function interruptOf(id: string, interrupt: InterruptInfo): { id: string; value: Record<string, unknown>; when: "during" } {
  const question = describeInterrupt(interrupt);
  return { id, value: { kind: interrupt.kind, question, payload: interrupt.payload, ...reviewRequest(interrupt, question) }, when: "during" };
}
