import type { Assignment } from "./agent-fit.js";
import type { BoardMessage } from "./board.js";
import type { BudgetStop } from "./budget.js";
import type { Retrieval } from "./memory.js";
import type { ModelIncident } from "./model-incident.js";
import type { FailureKind, PlannedSubtask, SubtaskStatus, ToolOffer } from "./plan.js";
import type { CriticVerdict } from "./review.js";
import type { ReviewDecision, RouteDecision } from "./review-mode.js";
import type { AnswerFormat, InterruptInfo, RunMetrics, StopReason, RunResult } from "./run.js";

/**
 * A step of a run as a person would name it: a role's node (intake, the planner, running the plan,
 * the critic, the synthesizer, a person's approval or answer, finishing), or `plan`, the planner's
 * model call within the planner's step. Named by the graph's code for its role, not by LangGraph's node names.
 */
export type RunStep = "intake" | "planner" | "plan" | "approve_plan" | "ask_human" | "execute" | "critic" | "synthesizer" | "approve_answer" | "finalize";

/** How a step ended: its work done, paused for a person (an interrupt), or failed. */
export type StepOutcome = "done" | "paused" | "failed";

/** The name under which the events that say what is at work (steps, subtasks) also reach the run's LangChain callback handlers, as custom events (see `emit`). */
export const RUN_EVENT_CALLBACK = "troupe-run-event";

/**
 * Everything a run reports while it goes, discriminated by `type` (noun-verb).
 * The CLI prints them, the store keeps them, the server streams them.
 */
export type RunEvent =
  | { type: "run-start"; runId: string; threadId: string; task: string; resumed: boolean }
  /** A step starts; a step that starts while another is open (the planner's `plan` call) is part of it. */
  | { type: "step-start"; step: RunStep }
  /** Every started step ends, also when it pauses for a person or fails (then with its error). */
  | { type: "step-end"; step: RunStep; outcome: StepOutcome; durationMs: number; error?: string }
  /** The thread's earlier turns the planner sees (kept turns, turns trimmed into the summary so far, their tokens). */
  | { type: "history-ready"; turns: number; trimmed: number; tokens: number; budget: number }
  /** Long-term memories recalled for the planner, and how; `error` when the store could not be read. */
  | { type: "memory-recall"; retrieval: Retrieval | null; items: Array<{ id: string; text: string; score: number; untrusted?: string }>; error?: string; note?: string }
  | { type: "plan-ready"; attempt: number; subtasks: PlannedSubtask[]; notes?: string[]; /** The plan's answer template, when it gave one (filled by code once the results are verified). */ answer?: string }
  | { type: "plan-invalid"; attempt: number; errors: string[] }
  /** A subtask of a plan that is still streaming in, accepted to start early (the whole plan follows with plan-ready). */
  | { type: "subtask-planned"; subtask: PlannedSubtask }
  | { type: "subtask-start"; subtaskId: string; label: string; agent: string; attempt: number }
  | {
      type: "subtask-end";
      subtaskId: string;
      status: SubtaskStatus;
      durationMs: number;
      summary?: string;
      error?: string;
      failureKind?: FailureKind;
      /** The untrusted sources of its result, when it has any. */
      untrusted?: string;
    }
  | { type: "subtask-skip"; subtaskId: string; reason: string }
  | { type: "map-item"; subtaskId: string; index: number; total: number; status: "success" | "error"; durationMs: number; error?: string }
  | { type: "tool-call"; subtaskId?: string; agent?: string; tool: string; ok: boolean; durationMs: number; preview: string; notes?: string[]; untrusted?: string }
  /** A subtask that asked for a capability went to the least busy agent that has it. */
  | ({ type: "agent-assign"; subtaskId: string } & Assignment)
  /** The tools a worker is offered for its subtask (fewer than its agent's: those the plan named, or the most relevant), and those find_tools added. */
  | { type: "tools-offer"; subtaskId: string; offer: ToolOffer }
  /** A message posted on the run's shared board. */
  | { type: "board-post"; message: BoardMessage }
  | { type: "critic-verdict"; verdict: CriticVerdict }
  /** The plan's route: `fast` (one subtask, its result the answer) or `planned`, and why. */
  | ({ type: "route-decide" } & RouteDecision)
  /** Whether a round's review runs or is skipped (the run's `review` mode), and why. */
  | ({ type: "review-decide" } & ReviewDecision)
  | { type: "approval-request"; interrupt: InterruptInfo }
  | { type: "model-retry"; incident: ModelIncident }
  | { type: "model-fallback"; incident: ModelIncident }
  | { type: "budget-exhausted"; stop: BudgetStop }
  /** On resume: tool calls that began before the process stopped and never finished (their audit rows are `started`). */
  | { type: "calls-in-flight"; calls: Array<{ auditId: number; tool: string; subtaskId?: string }> }
  | { type: "answer-token"; text: string }
  /** The answer as written, with how it is meant to be read (Markdown, or text written by rules or code). */
  | { type: "answer"; text: string; format?: AnswerFormat }
  | { type: "run-end"; status: RunResult["status"]; stopReason: StopReason | null; metrics: RunMetrics };

export type RunEventType = RunEvent["type"];

/** An event as stored and streamed: numbered per run, with a timestamp. */
export type StoredEvent = RunEvent & { seq: number; at: number; runId: string };
