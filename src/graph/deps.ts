import { dispatchCustomEvent } from "@langchain/core/callbacks/dispatch/web";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { AgentRegistry } from "../agents/define-agent.js";
import type { OutcomeSource } from "../agents/critic.js";
import { type CallOptions, UsageMeter } from "../agents/model-call.js";
import { RunLedger } from "../agents/run-ledger.js";
import type { ToolDiscovery } from "../agents/tool-offer.js";
import type { BudgetExhaustedError } from "../core/budget.js";
import { RUN_EVENT_CALLBACK, type RunEvent } from "../core/events.js";
import type { SubtaskView } from "../core/plan.js";
import { isUntrusted } from "../core/provenance.js";
import type { Memory } from "../core/memory.js";
import type { Stash } from "../core/stash.js";
import type { ModelSet } from "../providers/registry.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { WrittenFiles } from "../tools/written-files.js";
import type { State } from "./state.js";
import { statusOf } from "./subtask-status.js";

/** What the graph's nodes are built with. */
export interface GraphDeps {
  models: ModelSet;
  tools: ToolRegistry;
  agents: AgentRegistry;
  /** The workspace root, as a real path. */
  workspace: string;
  /** Where subtask results live, outside the graph state. */
  stash: Stash;
  /** How workers whose agents have many tools find the relevant ones (absent: every tool is offered). */
  discovery?: ToolDiscovery;
  /** Long-term memory, from which intake recalls the facts relevant to a task (none: no recall). */
  memory?: Memory;
  /** Prompt tokens the recalled facts may take (default MEMORY_LIMITS.recallTokenBudget; 0: none). */
  recallBudget?: number;
  /** Where the bytes of the files runs write are kept for a while, by their recorded hash (none: not kept). */
  writtenFiles?: WrittenFiles;
}

/** A node's meter: each retry and fallback is emitted as an event as it happens. */
export function createMeter(config: LangGraphRunnableConfig | undefined): UsageMeter {
  return new UsageMeter((incident) => emit(config, { type: incident.kind === "retry" ? "model-retry" : "model-fallback", incident }));
}

/** The key of the run's budget ledger in LangGraph's `configurable`. */
export const LEDGER_KEY = "troupe_ledger";

/**
 * The run's budget ledger, which the run lifecycle puts in the config it drives the graph with
 * (`configurable.troupe_ledger`); LangGraph hands it to every node and task of the run. None: no
 * budget is kept (a graph driven by hand).
 */
export function ledgerOf(config: LangGraphRunnableConfig | undefined): RunLedger | undefined {
  const ledger: unknown = config?.configurable?.[LEDGER_KEY];
  return ledger instanceof RunLedger ? ledger : undefined;
}

/** The options of a node's model calls: its meter, the run's ledger, and the run's abort signal. */
export function callOptions(_deps: GraphDeps, _runId: string, config: LangGraphRunnableConfig | undefined, meter: UsageMeter, subtaskId?: string): CallOptions {
  const options: CallOptions = { meter, signal: config?.signal };
  const ledger = ledgerOf(config);
  if (ledger) options.ledger = ledger;
  if (subtaskId !== undefined) options.subtaskId = subtaskId;
  return options;
}

/** Emits `budget-exhausted` the first time a run's budget stops it. */
export function announceBudgetStop(_deps: GraphDeps, _runId: string, config: LangGraphRunnableConfig | undefined, error: BudgetExhaustedError): void {
  const ledger = ledgerOf(config);
  if (!ledger || ledger.claimStopNotice()) emit(config, { type: "budget-exhausted", stop: error.stop });
}

/** The events that say what is at work (a step, a subtask): these also reach the run's callback handlers. */
const AT_WORK = new Set<RunEvent["type"]>(["step-start", "step-end", "subtask-start", "subtask-end", "subtask-skip"]);

/**
 * Sends an event to whoever streams the run (the CLI, the server, the event store). One that says
 * what is at work also goes to the run's callback handlers, as a LangChain custom event: they get
 * it in step with the work (the server's observer opens a subtask's span before its model calls),
 * where the stream delivers it later.
 */
export function emit(config: LangGraphRunnableConfig | undefined, event: RunEvent): void {
  write(config, event);
  void toHandlers(config, event);
}

/** `emit`, resolved once the callback handlers have the event, so they know it before the work it opens goes on. */
export async function announce(config: LangGraphRunnableConfig | undefined, event: RunEvent): Promise<void> {
  write(config, event);
  await toHandlers(config, event);
}

/**
 * Where a drive takes the run's events (`configurable.troupe_events`): straight from the node, in
 * the order they are emitted. Through LangGraph's custom stream each event was a chunk the drive
 * pulled, and every pull ran in a new async context with a LangSmith RunTree of its own — a
 * third of a zero-latency run's stream work. Without one (a caller streaming the graph itself),
 * events go to the custom stream as before.
 */
export const EVENTS_KEY = "troupe_events";

function write(config: LangGraphRunnableConfig | undefined, event: RunEvent): void {
  const sink: unknown = config?.configurable?.[EVENTS_KEY];
  if (typeof sink === "function") (sink as (event: RunEvent) => void)(event);
  else config?.writer?.(event);
}

async function toHandlers(config: LangGraphRunnableConfig | undefined, event: RunEvent): Promise<void> {
  // About 20 µs an event (and a RunTree and a merged config each): skipped when no handler takes
  // custom events (a CLI run has none; the server's observer takes them only when it opens spans).
  const callbacks = config?.callbacks;
  if (!AT_WORK.has(event.type) || callbacks === undefined) return;
  const handlers = Array.isArray(callbacks) ? callbacks : callbacks.handlers;
  if (handlers.every((handler) => typeof handler !== "object" || (handler as { ignoreCustomEvent?: boolean }).ignoreCustomEvent === true)) return;
  try {
    await dispatchCustomEvent(RUN_EVENT_CALLBACK, event, config);
  } catch {
    // A handler's failure is logged by LangChain; it never fails the run.
  }
}

/** Whether the run is on its first pass: never resumed, so none of its tool calls has been made before (see `ToolContext.firstPass`). */
export function firstPassOf(config: LangGraphRunnableConfig | undefined): boolean {
  return config?.configurable?.troupe_first_pass === true;
}

export function threadIdOf(config: LangGraphRunnableConfig | undefined): string | undefined {
  const id = config?.configurable?.thread_id;
  return typeof id === "string" ? id : undefined;
}

/** The plan with each subtask's status, for users and for the critic. */
export function planView(state: Pick<State, "plan" | "results">): SubtaskView[] {
  return state.plan.map((subtask) => {
    const result = state.results[subtask.id];
    const view: SubtaskView = { ...subtask, status: statusOf(state.results, subtask.id), attempts: result?.attempts ?? 0 };
    if (result?.assignment !== undefined && view.status !== "pending") {
      view.agent = result.assignment.agent;
      view.assignment = result.assignment;
    }
    if (result?.offer !== undefined && view.status !== "pending") view.offer = result.offer;
    if (result?.summary !== undefined) view.summary = result.summary;
    if (result?.error !== undefined) view.error = result.error;
    if (result?.failureKind !== undefined && view.status === "failed") view.failureKind = result.failureKind;
    if (result?.artifacts !== undefined && view.status !== "pending") view.artifacts = result.artifacts;
    if (result?.missingFiles !== undefined && view.status !== "pending") view.missingFiles = result.missingFiles;
    if (result?.startedAt !== undefined && result.endedAt !== undefined) view.durationMs = result.endedAt - result.startedAt;
    if (result?.ref !== undefined) view.ref = result.ref;
    if (result?.bytes !== undefined) view.bytes = result.bytes;
    if (result?.map !== undefined && view.status !== "pending") view.map = result.map;
    if (isUntrusted(result?.provenance) && view.status !== "pending") view.provenance = result?.provenance;
    return view;
  });
}

/**
 * The outcomes the critic and the synthesizer work from, each with its stashed result, from
 * which their prompts take bounded extracts. A result missing from the stash is left out.
 */
export async function outcomeSources(state: Pick<State, "plan" | "results">, stash: Stash): Promise<OutcomeSource[]> {
  return Promise.all(
    planView(state).map(async ({ id, label, agent, status, attempts, summary, error, failureKind, artifacts, missingFiles, ref, bytes, dependsOn, provenance }) => {
      const source: OutcomeSource = { id, label, agent, status, attempts };
      if (missingFiles !== undefined) source.missingFiles = missingFiles;
      if (dependsOn.length > 0) source.dependsOn = dependsOn;
      if (provenance !== undefined) source.provenance = provenance;
      if (summary !== undefined) source.summary = summary;
      if (error !== undefined) source.error = error;
      if (failureKind !== undefined) source.failureKind = failureKind;
      if (artifacts !== undefined) source.artifacts = artifacts;
      if (bytes !== undefined) source.bytes = bytes;
      if (ref !== undefined && (status === "done" || status === "failed")) {
        try {
          source.value = await stash.get(ref);
        } catch {
          // the summary still says what happened
        }
      }
      return source;
    }),
  );
}
