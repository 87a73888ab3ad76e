import { createHash } from "node:crypto";
import { isGraphBubbleUp, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { runRemoteAgent } from "../../agents/remote-worker.js";
import type { RunLedger } from "../../agents/run-ledger.js";
import { immediateStep, runWorker, type WorkerToolCall } from "../../agents/worker.js";
import type { Assignment } from "../../core/agent-fit.js";
import { BoardMessage, messagesFor } from "../../core/board.js";
import { type BudgetStop, isBudgetExhausted } from "../../core/budget.js";
import { designationFor } from "../../core/designation.js";
import { errorMessage } from "../../core/errors.js";
import { ArgReferenceError, describeShape } from "../../core/json-path.js";
import { LIMITS } from "../../core/limits.js";
import { type FailureKind, isArgRef, type MapTally, type MissingFiles, type PlannedSubtask, type SubtaskResult, type ToolOffer } from "../../core/plan.js";
import { describeSources, isUntrusted, joinLabels, type Label, TRUSTED } from "../../core/provenance.js";
import { carriedEncodings, resolveArgs } from "../../core/refs.js";
import type { ToolCallRecord } from "../../core/run.js";
import type { LabelledEntry } from "../../core/stash.js";
import { preview, stableStringify, truncate } from "../../core/text.js";
import { routeForModel } from "../../providers/registry.js";
import { fitToolArgs } from "../../tools/arg-fit.js";
import type { ToolContext, ToolOutcome } from "../../tools/define-tool.js";
import { announceBudgetStop, callOptions, createMeter, emit, firstPassOf, type GraphDeps, ledgerOf, threadIdOf } from "../deps.js";
import type { AgentDefinition } from "../../agents/define-agent.js";
import { artifactProblem, ArtifactRecorder, ItemWrites, missingItemFiles } from "../artifacts.js";
import { keepUnwritten } from "../unwritten.js";
import { LiveBoard } from "../board.js";
import { approvalByInterrupt, createDeferredSteps, durableStep, remoteInputByInterrupt } from "../durable.js";
import { argumentLabels, directProvenance } from "../subtask-provenance.js";
import { type ItemOutcome, runMap } from "../map-run.js";
import type { Update } from "../state.js";

/** What one subtask's run receives from the dispatcher: everything it needs, nothing more. */
export interface SubtaskPayload {
  runId: string;
  task: string;
  subtask: PlannedSubtask;
  attempt: number;
  /** The review round the run is in (how many verdicts it has had). */
  round: number;
  /** A partly failed map sent back by the critic: run only its failed items. */
  retryFailedItems: boolean;
  feedback: string[];
  maxSteps: number;
  mapConcurrency: number;
  promptBudget: number;
  /** The tools the run may use (a request's `tools`); null: every tool its agents can reach. */
  allowedTools?: string[] | null;
  /** The dependencies' summaries, stash handles and provenance; their values (and labels) are read from the stash when the subtask starts. */
  dependencies: Array<{ id: string; label: string; summary: string; ref: string | null; provenance?: Label }>;
  /** The label of `feedback`: the critic's notes are untrusted when it had read untrusted results. */
  feedbackProvenance?: Label;
  /** The subtasks that take arguments from this one's result: it must have a result for them. */
  consumers?: string[];
  /** How it was given to its agent, when it asked for a capability (`subtask.agent` is then the one chosen). */
  assignment?: Assignment;
  /** The run owner's long-term memory namespace, for the memory tools. */
  memoryNamespace?: string[];
}

/** What the node running a subtask shares with it while they run: the live board and the plan's subtask ids. */
export interface SubtaskLive {
  board: LiveBoard;
  planIds: () => readonly string[];
  /** Set while the plan still streams in: its calls with effects wait for it (see `ToolContext.effectsAllowed`). */
  effectsAllowed?: () => Promise<void>;
}

/** How one attempt ended, before it is written to the state. */
interface Attempt {
  status: "done" | "failed";
  value?: unknown;
  /** The value was handed on from a tool output or an argument, not typed by a model. */
  exact?: boolean;
  summary: string;
  error?: string;
  failureKind?: FailureKind;
  map?: MapTally;
  /** Where the value came from. */
  label?: Label;
}

/** A result with nothing in it: what a dependent cannot take arguments from. */
function isEmptyResult(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "string" && value.trim() === "");
}

function traceRecord(subtask: PlannedSubtask, call: WorkerToolCall, at: number): ToolCallRecord {
  const record: ToolCallRecord = {
    subtaskId: subtask.id,
    agent: subtask.agent,
    tool: call.tool,
    args: preview(call.args, 300),
    ok: call.outcome.ok,
    preview: call.outcome.ok ? truncate(call.outcome.summary, LIMITS.previewChars) : `${call.outcome.error.code}: ${call.outcome.error.message}`,
    durationMs: Math.round(call.durationMs),
    at,
    ...(call.notes && call.notes.length > 0 ? { notes: call.notes.slice(0, 10).map((note) => truncate(note, 200)) } : {}),
  };
  if (isUntrusted(call.outcome.label)) record.untrusted = describeSources(call.outcome.label);
  return record;
}

function toolFailure(outcome: Extract<ToolOutcome, { ok: false }>): Attempt {
  return {
    status: "failed",
    summary: "",
    error: `${outcome.error.code}: ${outcome.error.message}`,
    failureKind: outcome.error.code === "rejected" ? "rejected" : "error",
    ...(outcome.label ? { label: outcome.label } : {}),
  };
}

/** The values of the dependencies the arguments refer to, with their labels, read from the stash. */
async function dependencyValues(deps: GraphDeps, payload: SubtaskPayload): Promise<Map<string, LabelledEntry>> {
  const referenced = new Set(Object.values(payload.subtask.args).flatMap((arg) => (isArgRef(arg) ? [arg.ref] : [])));
  const values = new Map<string, LabelledEntry>();
  for (const id of referenced) {
    const ref = payload.dependencies.find((dependency) => dependency.id === id)?.ref;
    if (!ref) throw new ArgReferenceError(`${id} has no stored result to take arguments from`);
    values.set(id, await deps.stash.read(ref));
  }
  return values;
}

function mapSummary(tally: MapTally): string {
  if (tally.failed === 0) return `${tally.succeeded}/${tally.total} items succeeded`;
  const failures = tally.failures.map((failure) => `${failure.input} (${failure.error})`).join("; ");
  return truncate(`${tally.succeeded}/${tally.total} items succeeded; failed: ${failures}${tally.failed > tally.failures.length ? ` and ${tally.failed - tally.failures.length} more` : ""}`, LIMITS.previewChars);
}

/** Whether some call the subtask can make passes `test`: its direct step's tool, or any tool its worker's agent reaches (a map never waits for a person). */
function anyCall(deps: GraphDeps, subtask: PlannedSubtask, allowedTools: readonly string[] | null | undefined, test: (name: string) => boolean): boolean {
  if (subtask.mapOver !== undefined) return false;
  const usable = (name: string): boolean => (allowedTools?.includes(name) ?? true) && test(name);
  if (subtask.tool !== undefined) return usable(subtask.tool);
  return liveAgent(deps, subtask.agent)?.tools.some(usable) ?? false;
}

/**
 * Whether a subtask may wait for a person's approval of a tool call: a direct step of a tool
 * that needs one for its agent, or a worker whose agent reaches such a tool (a map never waits).
 */
/**
 * An agent as it stands now: its tools those it was given when troupe started and those a grant
 * given since (troupe grants) lets it reach, so a worker is offered a tool it was just granted.
 */
export function liveAgent(deps: Pick<GraphDeps, "agents" | "tools">, name: string): AgentDefinition | undefined {
  const agent = deps.agents.get(name);
  if (!agent) return undefined;
  const granted = deps.tools.reachable(name).filter((tool) => !agent.tools.includes(tool));
  return granted.length === 0 ? agent : { ...agent, tools: [...agent.tools, ...granted] };
}

export function subtaskMayPause(deps: GraphDeps, subtask: PlannedSubtask, allowedTools?: readonly string[] | null): boolean {
  // A remote agent may ask for a person's input at any time.
  if (subtask.mapOver === undefined && subtask.tool === undefined && liveAgent(deps, subtask.agent)?.remote) return true;
  return anyCall(deps, subtask, allowedTools, (name) => deps.tools.needsApproval(name, subtask.agent));
}

/** Whether untrusted data could make one of the subtask's calls wait for a person: the trust policy asks, and the subtask can make a call with an effect. */
export function subtaskMaySteer(deps: GraphDeps, subtask: PlannedSubtask, allowedTools?: readonly string[] | null): boolean {
  return anyCall(deps, subtask, allowedTools, (name) => deps.tools.mayAskTrust(name));
}

/**
 * Runs one subtask: a direct tool step, or a worker's tool-calling loop — once, or once per
 * item of its `mapOver` list. Arguments are resolved from the stash just before it starts, and
 * its result goes to the stash; the state gets the handle and a summary. A failure is a
 * result, not a crash. Every tool call, direct or a worker's, goes through the registry's
 * permissions and audit.
 *
 * A subtask that may wait for a person's approval of a tool call makes its steps durable, so
 * its re-run on resume repeats none of them (nor announces the subtask twice). The items of a
 * map are not: they run in parallel, so the order of their steps is not deterministic, and an
 * item's isolation would swallow the pause — a mapped subtask gets no approver, and its
 * high-risk calls are refused (and audited).
 */
export function createRunSubtask(deps: GraphDeps) {
  return async (payload: SubtaskPayload, config: LangGraphRunnableConfig, live?: SubtaskLive): Promise<Update> => {
    const { subtask } = payload;
    const board = live?.board ?? new LiveBoard([]);
    /** What it posted (its calls' values, replayed ones too): part of its update, so the state and the checkpoint keep them. */
    const posts: BoardMessage[] = [];
    let offer: ToolOffer | undefined;
    const meter = createMeter(config);
    const records: ToolCallRecord[] = [];
    let toolCallCount = 0;
    let tracedFailures = 0;
    const mapped = subtask.mapOver !== undefined;
    const agent = liveAgent(deps, subtask.agent);
    const allowedTools = payload.allowedTools ?? undefined;
    const mayPause = subtaskMayPause(deps, subtask, allowedTools);
    // A call untrusted data steers may pause a subtask too. On a run's first pass its steps are
    // made durable only when such a call comes (deferred); on a later pass, from the start.
    const maySteer = !mayPause && subtaskMaySteer(deps, subtask, allowedTools);
    const deferred = maySteer ? createDeferredSteps() : undefined;
    // Other subtasks skip the checkpoint writes durable steps cost.
    const step = mayPause ? durableStep : (deferred?.step ?? immediateStep);
    const labels = deps.tools.trust !== undefined;
    // The start is a step too: a subtask that ran again after waiting for a person keeps its first start (and announces it once).
    // After a first pass it is durable for a subtask that may be steered: replayed, it says an earlier pass saved this subtask's steps.
    const startStep = deferred && !firstPassOf(config) ? durableStep : step;
    const { value: startedAt, replayed: started } = await startStep("subtask_start", async () => {
      emit(config, { type: "subtask-start", subtaskId: subtask.id, label: subtask.label, agent: subtask.agent, attempt: payload.attempt });
      return Date.now();
    });
    // It paused on a steered call and saved its steps then: from here they are durable, so they are replayed, not repeated.
    if (deferred && started) await deferred.harden();
    // Set once the arguments are resolved; every call that writes a file is checked on disk as it finishes.
    let recorder: ArtifactRecorder | undefined;
    // A worker map's items: the files each one's calls set out to write, checked after the map.
    const itemWrites = mapped && subtask.tool === undefined ? new ItemWrites(deps.tools) : undefined;
    // A map keeps a bounded sample of its item calls in the trace (the first ones and failures); all are counted.
    const onToolCall = async (call: WorkerToolCall, replayed = false): Promise<void> => {
      toolCallCount += 1;
      const record = traceRecord(subtask, call, Date.now());
      const keep = !mapped || records.length < LIMITS.mapTracedCalls || (!call.outcome.ok && tracedFailures < LIMITS.mapTracedCalls);
      if (keep) {
        records.push(record);
        if (mapped && !call.outcome.ok) tracedFailures += 1;
      }
      if (!mapped && !replayed) {
        emit(config, {
          type: "tool-call",
          subtaskId: subtask.id,
          agent: subtask.agent,
          tool: call.tool,
          ok: call.outcome.ok,
          durationMs: record.durationMs,
          preview: record.preview,
          ...(record.notes ? { notes: record.notes } : {}),
          ...(record.untrusted ? { untrusted: record.untrusted } : {}),
        });
      }
      if (call.tool === "board_post" && call.outcome.ok) {
        const posted = BoardMessage.safeParse(call.outcome.value);
        if (posted.success && !posts.some((message) => message.id === posted.data.id)) {
          posts.push(posted.data);
          board.absorb([posted.data]);
        }
      }
      await recorder?.note(call);
    };
    const toolContext: ToolContext = {
      workspace: deps.workspace,
      runId: payload.runId,
      threadId: threadIdOf(config),
      firstPass: firstPassOf(config),
      agent: subtask.agent,
      subtaskId: subtask.id,
      signal: config.signal,
      ...(allowedTools ? { allowedTools } : {}),
      ...(payload.memoryNamespace ? { memoryNamespace: payload.memoryNamespace } : {}),
      ...(mapped ? {} : { requestApproval: approvalByInterrupt }),
      ...(live?.effectsAllowed ? { effectsAllowed: live.effectsAllowed } : {}),
      ...(subtask.writes && subtask.writes.length > 0 ? { writes: subtask.writes } : {}),
    };
    /** The tool context of the subtask, or of one item of its map, with its seat at the board. */
    const contextFor = (item?: number): ToolContext => ({
      ...toolContext,
      board: board.access({
        subtaskId: subtask.id,
        agent: subtask.agent,
        attempt: payload.attempt,
        round: payload.round,
        ...(item !== undefined ? { item } : {}),
        subtasks: () => live?.planIds() ?? [subtask.id],
        agents: deps.agents.names(),
        onPost: (message) => emit(config, { type: "board-post", message }),
      }),
    });
    let budgetStop: BudgetStop | undefined;
    // Call ids that a run of this attempt after a crash gives its calls again: the registry settles a call that had begun.
    const callIdFor = (scope: string) => (ordinal: number, tool: string, args: unknown): string =>
      `${payload.runId}/${subtask.id}/${payload.attempt}${scope}/${ordinal}/${createHash("sha256").update(`${tool} ${stableStringify(args)}`).digest("hex").slice(0, 16)}`;
    /** Encodings the references carry (content read as base64), set once the arguments are resolved. */
    let encodings: Record<string, string> = {};
    const callTool = async (tool: string, given: Record<string, unknown>, scope: string, context: ToolContext): Promise<ToolOutcome> => {
      const started = performance.now();
      // A referenced value reaches the tool in the type it takes (a number as its decimal text, bytes with their encoding); the trace says so.
      const { args, notes } = deps.tools.has(tool) ? fitToolArgs(deps.tools.spec(tool).function.parameters as Record<string, unknown>, given, encodings) : { args: given, notes: [] };
      // A direct call that will wait for a person because an untrusted reference steered it: the start step is saved first.
      if (deferred && context.provenance && deps.tools.steering(tool, args, context.provenance)) await deferred.harden();
      const outcome = await deps.tools.call(tool, args, { ...context, callId: callIdFor(scope)(1, tool, args) });
      await onToolCall({ tool, args, outcome, durationMs: performance.now() - started, ...(notes.length > 0 ? { notes } : {}) });
      return outcome;
    };
    const work = async (args: Record<string, unknown>, argLabels: Record<string, Label>, item?: { index: number; total: number; argument: string }): Promise<Attempt> => {
      const context = contextFor(item?.index);
      if (subtask.tool !== undefined) {
        // Nothing happens before a direct call's approval, so its re-run on resume repeats nothing.
        const called = labels ? { ...context, provenance: directProvenance(subtask, argLabels) } : context;
        const outcome = await callTool(subtask.tool, args, item ? `/item${item.index}` : "", called);
        return outcome.ok
          ? { status: "done", value: outcome.value, exact: true, summary: truncate(outcome.summary, LIMITS.previewChars), ...(outcome.label ? { label: outcome.label } : {}) }
          : toolFailure(outcome);
      }
      if (!agent) return { status: "failed", summary: "", error: `unknown agent "${subtask.agent}"`, failureKind: "error" };
      if (agent.remote) {
        const remote = agent.remote;
        const scope = `${item ? `/item${item.index}` : ""}/remote`;
        const outcome = await runRemoteAgent({
          agent: { ...agent, remote },
          subtask,
          args,
          call: async (callArgs, turn) => {
            const started = performance.now();
            const outcome = await deps.tools.call(remote.tool, callArgs, { ...context, callId: callIdFor(scope)(turn, remote.tool, callArgs) });
            return { outcome, durationMs: performance.now() - started };
          },
          onCall: (call, replayed) => onToolCall(call, replayed),
          step: item ? immediateStep : step,
          ...(item ? {} : { ask: remoteInputByInterrupt }),
          meter,
          ...(ledgerOf(config) ? { ledger: ledgerOf(config) as RunLedger } : {}),
        });
        return { status: outcome.status, value: outcome.value, summary: outcome.summary, ...(outcome.exact ? { exact: true } : {}), ...(outcome.error !== undefined ? { error: outcome.error, failureKind: outcome.failureKind ?? "error" } : {}) };
      }
      const outcome = await runWorker(
        {
          agent,
          model: routeForModel(deps.models, agent.model, agent.role ?? "worker"),
          tools: deps.tools,
          task: payload.task,
          subtask,
          args,
          dependencies: payload.dependencies.map(({ id, label, summary, provenance }) => ({ id, label, summary, ...(provenance ? { provenance } : {}) })),
          feedback: payload.feedback,
          toolContext: context,
          maxSteps: payload.maxSteps,
          promptBudget: payload.promptBudget,
          ...(allowedTools ? { allowedTools } : {}),
          ...(item ? { item } : {}),
          onToolCall: item && itemWrites ? (call: WorkerToolCall, replayed?: boolean) => { itemWrites.note(item.index, call); return onToolCall(call, replayed); } : onToolCall,
          step,
          callIdFor: callIdFor(item ? `/item${item.index}` : ""),
          ...(deps.discovery ? { discovery: deps.discovery } : {}),
          onOffer: (made) => {
            // A map's items each find their tools; the trace keeps the first item's offer.
            if (item && item.index > 0 && offer) return;
            offer = made;
            // A copy: the worker adds to its offer as find_tools finds more.
            if (!mapped) emit(config, { type: "tools-offer", subtaskId: subtask.id, offer: structuredClone(made) });
          },
          board: messagesFor(board.messages(), { subtaskId: subtask.id, agent: subtask.agent }),
          ...(labels
            ? {
                trust: {
                  args: argLabels,
                  ...(payload.feedbackProvenance ? { feedback: payload.feedbackProvenance } : {}),
                  designation: designationFor(payload.task, subtask, trustedValues),
                  ...(deferred ? { beforeSteeredCall: deferred.harden } : {}),
                },
              }
            : {}),
        },
        callOptions(deps, payload.runId, config, meter, subtask.id),
      );
      const attempt: Attempt = { status: outcome.status, value: outcome.value, summary: outcome.summary, ...(outcome.label ? { label: outcome.label } : {}) };
      if (outcome.exact) attempt.exact = true;
      if (outcome.error !== undefined) attempt.error = outcome.error;
      if (outcome.failureKind !== undefined) attempt.failureKind = outcome.failureKind;
      return attempt;
    };

    let attempt: Attempt;
    let missingFiles: MissingFiles | undefined;
    /** The values of arguments that came by reference from trusted results: what they name, the plan named. */
    let trustedValues: Record<string, unknown> = {};
    let inputLabel: Label = TRUSTED;
    try {
      const values = await dependencyValues(deps, payload);
      const args = resolveArgs(subtask, (id) => values.get(id)?.value);
      encodings = carriedEncodings(subtask, (id) => values.get(id)?.value);
      const argLabels = argumentLabels(subtask, values);
      inputLabel = joinLabels(...Object.values(argLabels));
      trustedValues = Object.fromEntries(Object.entries(args).filter(([name]) => isArgRef(subtask.args[name] ?? { value: null }) && !isUntrusted(argLabels[name])));
      recorder = new ArtifactRecorder(deps.tools, deps.workspace, subtask, args, deps.writtenFiles);
      if (subtask.mapOver === undefined) {
        attempt = await work(args, argLabels);
      } else {
        const argument = subtask.mapOver;
        const list = args[argument];
        if (!Array.isArray(list)) throw new ArgReferenceError(`the argument "${argument}" to map over is not a list: it is ${describeShape(list)}: ${preview(list, 200)}`);
        const { report, tally, label: mapLabel } = await runMap({
          stash: deps.stash,
          key: { runId: payload.runId, subtaskId: subtask.id },
          subtask,
          items: list,
          round: payload.round,
          retryFailedOnly: payload.retryFailedItems,
          concurrency: payload.mapConcurrency,
          signal: config.signal,
          runItem: async (item, index): Promise<ItemOutcome> => {
            // An item keeps its list's label.
            const result = await work({ ...args, [argument]: item }, argLabels, { index, total: list.length, argument });
            const label = labels ? { label: result.label ?? joinLabels(...Object.values(argLabels)) } : {};
            return result.status === "done" ? { ok: true, output: result.value ?? null, ...label } : { ok: false, error: result.error ?? "failed", ...label };
          },
          onItem: (record) => {
            const event = { type: "map-item" as const, subtaskId: subtask.id, index: record.index, total: list.length, status: record.status, durationMs: Math.round(record.durationMs) };
            emit(config, record.error !== undefined ? { ...event, error: truncate(record.error, 300) } : event);
          },
        });
        const summary = mapSummary(tally);
        // The files its items were asked to make, checked for every item (those kept from before a crash too).
        if (subtask.tool !== undefined) missingFiles = await missingItemFiles(deps.tools, deps.workspace, subtask.tool, (index) => ({ ...args, [argument]: list[index] }), report);
        else missingFiles = await itemWrites?.missing(deps.workspace);
        attempt =
          tally.overallStatus === "ALL_FAILURE"
            ? { status: "failed", value: report, summary, error: `all ${tally.total} items failed; ${tally.failures[0] ? `${tally.failures[0].input}: ${tally.failures[0].error}` : ""}`, failureKind: "error", map: tally, label: mapLabel }
            : { status: "done", value: report, exact: true, summary, map: tally, label: mapLabel };
      }
    } catch (error) {
      // Cancellation stops the run; a pause (a tool waiting for approval) passes through to LangGraph.
      if (config.signal?.aborted || isGraphBubbleUp(error)) throw error;
      if (isBudgetExhausted(error)) {
        budgetStop = error.stop;
        announceBudgetStop(deps, payload.runId, config, error);
        attempt = { status: "failed", summary: "", error: "stopped: the run's budget ran out before this subtask finished", failureKind: "budget" };
      } else {
        attempt = { status: "failed", summary: "", error: errorMessage(error), failureKind: "error" };
      }
    }
    const artifacts = recorder?.list() ?? [];
    const broken = artifacts.flatMap((artifact) => artifactProblem(artifact) ?? []);
    if (attempt.status === "done" && broken.length > 0) {
      attempt = { ...attempt, status: "failed", error: broken.join("; "), failureKind: "artifact" };
    }
    const consumers = payload.consumers ?? [];
    if (attempt.status === "done" && !attempt.exact && isEmptyResult(attempt.value) && consumers.length > 0) {
      // Nothing to hand on: what takes its arguments from it must not run on an empty value.
      attempt = { ...attempt, status: "failed", error: `finished without a result, and ${consumers.join(", ")} take${consumers.length === 1 ? "s" : ""} arguments from it`, failureKind: "empty" };
    }

    const result: SubtaskResult = { status: attempt.status, attempts: payload.attempt, summary: attempt.summary, llmCalls: meter.usage.llmCalls, toolCalls: toolCallCount };
    if (attempt.error !== undefined) result.error = attempt.error;
    if (attempt.status === "failed") result.failureKind = attempt.failureKind ?? "error";
    if (attempt.map !== undefined) result.map = attempt.map;
    if (artifacts.length > 0) result.artifacts = artifacts;
    if (missingFiles !== undefined) result.missingFiles = missingFiles;
    if (payload.assignment) result.assignment = payload.assignment;
    if (offer) result.offer = offer;
    // The result's label: what made it, or at least its inputs'.
    const label = joinLabels(attempt.label, inputLabel);
    if (isUntrusted(label)) result.provenance = label;
    const unwritten = recorder?.unwritten() ?? [];
    if (unwritten.length > 0) result.unwritten = await keepUnwritten(deps, payload.runId, subtask.id, unwritten, label);
    if (attempt.status === "done" || attempt.value !== undefined) {
      try {
        const entry = await deps.stash.put({ runId: payload.runId, subtaskId: subtask.id }, attempt.value ?? null, label);
        result.ref = entry.ref;
        result.bytes = entry.bytes;
      } catch (error) {
        if (config.signal?.aborted) throw error;
        result.status = "failed";
        result.failureKind = "error";
        result.error = `its result could not be stored: ${errorMessage(error)}`;
      }
    }
    result.startedAt = startedAt;
    result.endedAt = Date.now();
    emit(config, {
      type: "subtask-end",
      subtaskId: subtask.id,
      status: result.status,
      durationMs: result.endedAt - startedAt,
      summary: result.summary,
      ...(result.error !== undefined ? { error: result.error } : {}),
      ...(result.failureKind !== undefined ? { failureKind: result.failureKind } : {}),
      ...(result.provenance ? { untrusted: describeSources(result.provenance) } : {}),
    });
    return {
      results: { [subtask.id]: result },
      toolCalls: records,
      nodes: [`subtask:${subtask.id}`],
      modelIncidents: meter.incidents,
      metrics: { nodeVisits: 1, toolCalls: toolCallCount, ...meter.usage },
      ...(posts.length > 0 ? { board: posts } : {}),
      ...(budgetStop ? { stopReason: "budget_exhausted" as const, budgetStop } : {}),
    };
  };
}
