import type { AIMessage } from "@langchain/core/messages";
import type { BoardMessage } from "../core/board.js";
import type { BudgetStop } from "../core/budget.js";
import type { Label } from "../core/provenance.js";
import type { ModelIncident } from "../core/model-incident.js";
import type { PlannedSubtask, ToolOffer } from "../core/plan.js";
import type { ToolContext, ToolOutcome } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { ModelRoute } from "../providers/registry.js";
import type { AgentDefinition } from "./define-agent.js";
import type { ModelUsage } from "./model-call.js";
import type { ToolDiscovery } from "./tool-offer.js";
import type { AgentLoopTrust } from "./agent-loop-provenance.js";

/**
 * What a worker takes and gives back, and the steps it is made of: the shapes the worker's loop
 * (agent-loop-run.ts, agent-loop-calls.ts, agent-loop-conversation.ts) and its callers share, apart from
 * `runAgentLoop` (agent-loop.ts) so the loop's files do not import the file that starts them.
 */

/** What a worker knows of a subtask it depends on. */
export interface DependencyView {
  id: string;
  label: string;
  summary: string;
  /** Where its result came from: an untrusted one's summary is shown as data. */
  provenance?: Label;
}

/**
 * Runs a step of the worker so that it is not repeated when the worker runs again after a pause
 * or a crash (the graph implements it with LangGraph tasks): the step's saved result comes back
 * instead, with `replayed` set. A step's `work` must return its failures, not throw them.
 */
export type DurableStep = <T>(name: string, work: () => Promise<T>, keep?: (value: T) => T) => Promise<{ value: T; replayed: boolean }>;

export interface AgentLoopInput {
  agent: AgentDefinition;
  model: ModelRoute;
  tools: ToolRegistry;
  task: string;
  subtask: PlannedSubtask;
  args: Record<string, unknown>;
  dependencies: DependencyView[];
  feedback: string[];
  toolContext: ToolContext;
  maxSteps: number;
  /** Prompt tokens one model call may use; the conversation is trimmed to fit. */
  promptBudget?: number;
  /** For one item of a mapped subtask: which item, and the argument it is. */
  item?: { index: number; total: number; argument: string };
  /** The tools the run may use, when it is restricted (a request's `tools`): it narrows the agent's tools. */
  allowedTools?: readonly string[];
  /** Told about each tool call as it finishes (`replayed`: it had finished before a pause or a crash); the worker waits for it. */
  onToolCall?: (call: AgentToolCall, replayed: boolean) => void | Promise<void>;
  /** How model calls and tool calls are made durable (default: not at all). */
  step?: DurableStep;
  /**
   * Awaited before each tool call starts: a worker whose steps are saved only once it acts (its
   * model calls alone are cheap to make again) makes them durable here, so the call and every
   * step after it are saved and a pause or a crash from then on repeats none of them.
   */
  beforeToolCall?: () => Promise<void>;
  /**
   * The id of the worker's n-th tool call (from 1) with this tool and arguments, the same when
   * the worker runs again after a crash: the registry then settles a call that had begun
   * instead of running it twice.
   */
  callIdFor?: (ordinal: number, tool: string, args: unknown) => string;
  /** How the tools it is offered are found when its agent has many (see `offerTools`). */
  discovery?: ToolDiscovery;
  /** Told which tools it is offered, when fewer than it may use, and again when find_tools adds some. */
  onOffer?: (offer: ToolOffer) => void;
  /** Messages on the run's board addressed to this subtask when it starts (shown in its prompt). */
  board?: readonly BoardMessage[];
  /**
   * Whether its result is the run's answer, as it is (the fast route: the plan's only subtask),
   * asked at each model call: a plan that still streams is not known to be one subtask until it
   * ends, so the subtask message says so from the first call made after that.
   */
  answersTask?: () => boolean;
  /** Provenance of its inputs; absent: no trust policy (everything is trusted, nothing is checked). */
  trust?: AgentLoopTrust;
}

/**
 * A model step as it is kept: the answer, or why there is none (a failure, or the run's budget
 * running out — which stops the run, so it is rethrown after the step rather than thrown inside
 * it, where it would fail the whole superstep). Usage and incidents come along so a replay
 * counts them again.
 */
export type ModelStep = ({ message: AIMessage } | { error: string; refused?: true } | { budget: BudgetStop }) & { usage: ModelUsage; incidents: ModelIncident[] };

/** A tool step as it is kept: the call, its outcome (bounded for the checkpoint), and whether the value was cut. */
export interface ToolStep extends AgentToolCall {
  cut: boolean;
}

/** One tool call made by a worker, for the trace. */
export interface AgentToolCall {
  tool: string;
  args: unknown;
  outcome: ToolOutcome;
  durationMs: number;
  /** The arguments the model gave as handles, and the handle of each (`content` → `args.text`). */
  handles?: Record<string, string>;
  /** How its arguments were brought to the types the tool takes. */
  notes?: string[];
}

export interface AgentLoopOutcome {
  status: "done" | "failed";
  value?: unknown;
  /** The value was passed on from a tool output or an argument, byte for byte, not typed by the model. */
  exact?: boolean;
  summary: string;
  error?: string;
  /** Why a failed worker did not finish: it tried (`error`), cannot do such work (`unable`), a person rejected its tool call (`rejected`), or its model refused (`refused`). */
  failureKind?: "error" | "unable" | "rejected" | "refused";
  toolCalls: AgentToolCall[];
  steps: number;
  /** The tools it was offered, when fewer than it may use, and why. */
  offer?: ToolOffer;
  /** Where its result came from: untrusted when anything it read was (its whole context shaped it). */
  label?: Label;
}
