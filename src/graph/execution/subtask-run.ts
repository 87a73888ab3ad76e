import { createHash } from "node:crypto";
import { isGraphBubbleUp, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { runRemoteAgent } from "../../agents/remote-worker.js";
import type { RunLedger } from "../../agents/run-ledger.js";
import { immediateStep, runAgentLoop, type AgentToolCall } from "../../agents/agent-loop.js";
import type { AgentDefinition } from "../../agents/define-agent.js";
import { messagesFor } from "../../core/board.js";
import { type BudgetStop, isBudgetExhausted } from "../../core/budget.js";
import { designationFor } from "../../core/designation.js";
import { errorMessage } from "../../core/errors.js";
import { ArgReferenceError, describeShape } from "../../core/json-path.js";
import { LIMITS } from "../../core/limits.js";
import { isArgRef, type MissingFiles, type PlannedSubtask, type SubtaskResult, type ToolOffer } from "../../core/plan.js";
import { describeSources, isUntrusted, joinLabels, type Label, TRUSTED } from "../../core/provenance.js";
import { carriedEncodings, resolveArgs } from "../../core/refs.js";
import { preview, stableStringify, truncate } from "../../core/text.js";
import { routeForModel } from "../../providers/registry.js";
import { fitToolArgs } from "../../tools/arg-fit.js";
import type { ToolContext, ToolOutcome } from "../../tools/define-tool.js";
import { ArtifactRecorder, ItemWrites, missingItemFiles } from "../artifacts.js";
import { LiveBoard } from "../board.js";
import { announce, announceBudgetStop, callOptions, createMeter, emit, firstPassOf, type GraphDeps, ledgerOf, threadIdOf } from "../deps.js";
import { approvalByInterrupt, createDeferredSteps, durableStep, elicitationByInterrupt, remoteInputByInterrupt } from "../durable.js";
import { type ItemOutcome, runMap } from "./map-run.js";
import type { Update } from "../state.js";
import { argumentLabels, directProvenance, remoteProvenance } from "./subtask-provenance.js";
import { keepUnwritten } from "../unwritten.js";
import { type Attempt, checkedAttempt, dependencyValues, mapSummary, toolFailure } from "./subtask-attempt.js";
import { SubtaskCalls } from "./subtask-calls.js";
import type { SubtaskLive, SubtaskPayload } from "./subtask-payload.js";
import { liveAgent, subtaskMayPause, subtaskMaySteer } from "./subtask-reach.js";

type Step = typeof immediateStep;
type MapItem = { index: number; total: number; argument: string };

/**
 * One run of one subtask, in named steps: start → resolve its inputs → work (a direct tool call,
 * a remote agent or a worker; once, or once per item of its map) → check the attempt → write its
 * result (stash, unwritten files, label) → finish (the end event and the state update). The
 * fields are what the steps share: the trace of its calls, its board posts, its durability.
 */
export class SubtaskRun {
  readonly #deps: GraphDeps;
  readonly #payload: SubtaskPayload;
  readonly #config: LangGraphRunnableConfig;
  readonly #live: SubtaskLive | undefined;
  readonly #subtask: PlannedSubtask;
  readonly #board: LiveBoard;
  readonly #meter: ReturnType<typeof createMeter>;
  readonly #mapped: boolean;
  readonly #agent: AgentDefinition | undefined;
  readonly #allowedTools: string[] | undefined;
  /** Whether outcomes carry provenance labels (a trust policy is set). */
  readonly #labels: boolean;
  readonly #deferred: ReturnType<typeof createDeferredSteps> | undefined;
  readonly #step: Step;
  readonly #startStep: Step;
  readonly #toolContext: ToolContext;
  readonly #calls: SubtaskCalls;
  #offer: ToolOffer | undefined;
  /** Set once the arguments are resolved; every call that writes a file is checked on disk as it finishes. */
  #recorder: ArtifactRecorder | undefined;
  /** Encodings the references carry (content read as base64), set once the arguments are resolved. */
  #encodings: Record<string, string> = {};
  /** The values of arguments that came by reference from trusted results: what they name, the plan named. */
  #trustedValues: Record<string, unknown> = {};
  #inputLabel: Label = TRUSTED;
  #missingFiles: MissingFiles | undefined;
  /** A worker map's items: the files each one's calls set out to write, checked after the map. */
  readonly #itemWrites: ItemWrites | undefined;
  /** A worker that may pause, in its tool calls only: its steps become durable before its first one. */
  readonly #pausesInCalls: boolean;
  #budgetStop: BudgetStop | undefined;

  constructor(deps: GraphDeps, payload: SubtaskPayload, config: LangGraphRunnableConfig, live: SubtaskLive | undefined) {
    this.#deps = deps;
    this.#payload = payload;
    this.#config = config;
    this.#live = live;
    const subtask = payload.subtask;
    this.#subtask = subtask;
    this.#board = live?.board ?? new LiveBoard([]);
    this.#calls = new SubtaskCalls(subtask, this.#board, config);
    this.#meter = createMeter(config);
    this.#mapped = subtask.mapOver !== undefined;
    this.#itemWrites = this.#mapped && subtask.tool === undefined ? new ItemWrites(deps.tools) : undefined;
    this.#agent = liveAgent(deps, subtask.agent);
    this.#allowedTools = payload.allowedTools ?? undefined;
    const mayPause = subtaskMayPause(deps, subtask, this.#allowedTools);
    // A worker's own subtask pauses only in a tool call (an approval, a server's question): its
    // steps are made durable before its first tool call (deferred), and one that answers without
    // calling a tool costs no checkpoint writes. Remote agents, direct calls and maps: from the start.
    this.#pausesInCalls = mayPause && !this.#agent?.remote && subtask.tool === undefined && !this.#mapped;
    // A call untrusted data steers may pause a subtask too. On a run's first pass its steps are
    // made durable only when such a call comes (deferred); on a later pass, from the start.
    const maySteer = !mayPause && subtaskMaySteer(deps, subtask, this.#allowedTools);
    this.#deferred = maySteer || this.#pausesInCalls ? createDeferredSteps() : undefined;
    // Other subtasks skip the checkpoint writes durable steps cost.
    this.#step = mayPause && !this.#pausesInCalls ? durableStep : (this.#deferred?.step ?? immediateStep);
    // The start is a step too: a subtask that ran again after waiting for a person keeps its first start (and announces it once).
    // After a first pass it is durable for a subtask that may be steered: replayed, it says an earlier pass saved this subtask's steps.
    this.#startStep = this.#deferred && !firstPassOf(config) ? durableStep : this.#step;
    this.#labels = deps.tools.trust !== undefined;
    const allowedTools = this.#allowedTools;
    this.#toolContext = {
      workspace: deps.workspace,
      runId: payload.runId,
      threadId: threadIdOf(config),
      firstPass: firstPassOf(config),
      agent: subtask.agent,
      subtaskId: subtask.id,
      signal: config.signal,
      ...(allowedTools ? { allowedTools } : {}),
      ...(payload.memoryNamespace ? { memoryNamespace: payload.memoryNamespace } : {}),
      ...(this.#mapped ? {} : { requestApproval: approvalByInterrupt, requestInput: elicitationByInterrupt }),
      ...(live?.effectsAllowed ? { effectsAllowed: live.effectsAllowed } : {}),
      ...(subtask.writes && subtask.writes.length > 0 ? { writes: subtask.writes } : {}),
    };
  }

  /** Start: announces the subtask (once, even when it runs again after a pause) and says when it started. */
  async start(): Promise<number> {
    const { subtask, attempt } = this.#payload;
    const { value: startedAt, replayed: started } = await this.#startStep("subtask_start", async () => {
      await announce(this.#config, { type: "subtask-start", subtaskId: subtask.id, label: subtask.label, agent: subtask.agent, attempt });
      return Date.now();
    });
    // It paused on a steered call and saved its steps then: from here they are durable, so they are replayed, not repeated.
    if (this.#deferred && started) await this.#deferred.harden();
    return startedAt;
  }

  /**
   * Resolve and work: the arguments read from the stash, then the work, once or per item. A
   * failure is an attempt that failed; cancellation and a pause for a person pass through.
   */
  async attempt(): Promise<Attempt> {
    const subtask = this.#subtask;
    try {
      const { args, argLabels } = await this.#resolveInputs();
      if (subtask.mapOver === undefined) return await this.#work(args, argLabels);
      return await this.#workEachItem(subtask.mapOver, args, argLabels);
    } catch (error) {
      if (this.#config.signal?.aborted || isGraphBubbleUp(error)) throw error;
      if (isBudgetExhausted(error)) {
        this.#budgetStop = error.stop;
        announceBudgetStop(this.#deps, this.#payload.runId, this.#config, error);
        return { status: "failed", summary: "", error: "stopped: the run's budget ran out before this subtask finished", failureKind: "budget" };
      }
      return { status: "failed", summary: "", error: errorMessage(error), failureKind: "error" };
    }
  }

  /** Check: the attempt as it stands once its files and its result are checked. */
  checked(attempt: Attempt): Attempt {
    return checkedAttempt(attempt, this.#recorder?.list() ?? [], this.#payload.consumers ?? []);
  }

  /** Write the result: the state's record of the attempt, its label, its unwritten files kept, its value in the stash. */
  async result(attempt: Attempt, startedAt: number): Promise<SubtaskResult> {
    const payload = this.#payload;
    const artifacts = this.#recorder?.list() ?? [];
    const result: SubtaskResult = { status: attempt.status, attempts: payload.attempt, summary: attempt.summary, llmCalls: this.#meter.usage.llmCalls, toolCalls: this.#calls.count };
    if (attempt.error !== undefined) result.error = attempt.error;
    if (attempt.status === "failed") result.failureKind = attempt.failureKind ?? "error";
    if (attempt.map !== undefined) result.map = attempt.map;
    if (artifacts.length > 0) result.artifacts = artifacts;
    if (this.#missingFiles !== undefined) result.missingFiles = this.#missingFiles;
    if (payload.assignment) result.assignment = payload.assignment;
    if (this.#offer) result.offer = this.#offer;
    // The result's label: what made it, or at least its inputs'.
    const label = joinLabels(attempt.label, this.#inputLabel);
    // Kept when untrusted, or when it holds private data (a trusted file's, a fact's): a dependent that reads its summary holds it too.
    if (isUntrusted(label) || label.held !== undefined || label.heldMore !== undefined) result.provenance = label;
    const unwritten = this.#recorder?.unwritten() ?? [];
    if (unwritten.length > 0) result.unwritten = await keepUnwritten(this.#deps, payload.runId, this.#subtask.id, unwritten, label);
    if (attempt.status === "done" || attempt.value !== undefined) {
      try {
        const entry = await this.#deps.stash.put({ runId: payload.runId, subtaskId: this.#subtask.id }, attempt.value ?? null, label);
        result.ref = entry.ref;
        result.bytes = entry.bytes;
      } catch (error) {
        if (this.#config.signal?.aborted) throw error;
        result.status = "failed";
        result.failureKind = "error";
        result.error = `its result could not be stored: ${errorMessage(error)}`;
      }
    }
    result.startedAt = startedAt;
    result.endedAt = Date.now();
    return result;
  }

  /** Finish: the end event, and the update the node hands LangGraph. */
  finish(result: SubtaskResult, startedAt: number): Update {
    const subtask = this.#subtask;
    emit(this.#config, {
      type: "subtask-end",
      subtaskId: subtask.id,
      status: result.status,
      durationMs: (result.endedAt ?? Date.now()) - startedAt,
      summary: result.summary,
      ...(result.error !== undefined ? { error: result.error } : {}),
      ...(result.failureKind !== undefined ? { failureKind: result.failureKind } : {}),
      ...(isUntrusted(result.provenance) ? { untrusted: describeSources(result.provenance) } : {}),
    });
    return {
      results: { [subtask.id]: result },
      toolCalls: this.#calls.records,
      nodes: [`subtask:${subtask.id}`],
      modelIncidents: this.#meter.incidents,
      metrics: { nodeVisits: 1, toolCalls: this.#calls.count, ...this.#meter.usage },
      ...(this.#calls.posts.length > 0 ? { board: this.#calls.posts } : {}),
      ...(this.#budgetStop ? { stopReason: "budget_exhausted" as const, budgetStop: this.#budgetStop } : {}),
    };
  }

  /** The arguments from the dependencies' stashed values, with their labels; sets up the artifact recorder. */
  async #resolveInputs(): Promise<{ args: Record<string, unknown>; argLabels: Record<string, Label> }> {
    const subtask = this.#subtask;
    const values = await dependencyValues(this.#deps, this.#payload);
    const args = resolveArgs(subtask, (id) => values.get(id)?.value);
    this.#encodings = carriedEncodings(subtask, (id) => values.get(id)?.value);
    const argLabels = argumentLabels(subtask, values);
    this.#inputLabel = joinLabels(...Object.values(argLabels));
    this.#trustedValues = Object.fromEntries(Object.entries(args).filter(([name]) => isArgRef(subtask.args[name] ?? { value: null }) && !isUntrusted(argLabels[name])));
    this.#recorder = new ArtifactRecorder(this.#deps.tools, this.#deps.workspace, subtask, args, this.#deps.writtenFiles);
    return { args, argLabels };
  }

  /** The work of a map: once per item of the list argument, then the files its items were to make checked. */
  async #workEachItem(argument: string, args: Record<string, unknown>, argLabels: Record<string, Label>): Promise<Attempt> {
    const { subtask, payload, config, deps } = { subtask: this.#subtask, payload: this.#payload, config: this.#config, deps: this.#deps };
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
        const result = await this.#work({ ...args, [argument]: item }, argLabels, { index, total: list.length, argument });
        const label = this.#labels ? { label: result.label ?? joinLabels(...Object.values(argLabels)) } : {};
        return result.status === "done" ? { ok: true, output: result.value ?? null, ...label } : { ok: false, error: result.error ?? "failed", ...label };
      },
      onItem: (record) => {
        const event = { type: "map-item" as const, subtaskId: subtask.id, index: record.index, total: list.length, status: record.status, durationMs: Math.round(record.durationMs) };
        emit(config, record.error !== undefined ? { ...event, error: truncate(record.error, 300) } : event);
      },
    });
    const summary = mapSummary(tally);
    // The files its items were asked to make, checked for every item (those kept from before a crash too).
    if (subtask.tool !== undefined) this.#missingFiles = await missingItemFiles(deps.tools, deps.workspace, subtask.tool, (index) => ({ ...args, [argument]: list[index] }), report);
    else this.#missingFiles = await this.#itemWrites?.missing(deps.workspace);
    return tally.overallStatus === "ALL_FAILURE"
      ? { status: "failed", value: report, summary, error: `all ${tally.total} items failed; ${tally.failures[0] ? `${tally.failures[0].input}: ${tally.failures[0].error}` : ""}`, failureKind: "error", map: tally, label: mapLabel }
      : { status: "done", value: report, exact: true, summary, map: tally, label: mapLabel };
  }

  /** The work itself, for the subtask or one item of its map: a direct tool call, a remote agent, or a worker. */
  async #work(args: Record<string, unknown>, argLabels: Record<string, Label>, item?: MapItem): Promise<Attempt> {
    const context = this.#contextFor(item?.index);
    const subtask = this.#subtask;
    if (subtask.tool !== undefined) {
      // Nothing happens before a direct call's approval, so its re-run on resume repeats nothing.
      const called = this.#labels ? { ...context, provenance: directProvenance(subtask, argLabels, designationFor(this.#payload.task, subtask, this.#trustedValues)) } : context;
      const outcome = await this.#callTool(subtask.tool, args, item ? `/item${item.index}` : "", called);
      return outcome.ok
        ? { status: "done", value: outcome.value, exact: true, summary: truncate(outcome.summary, LIMITS.previewChars), ...(outcome.label ? { label: outcome.label } : {}) }
        : toolFailure(outcome);
    }
    const agent = this.#agent;
    if (!agent) return { status: "failed", summary: "", error: `unknown agent "${subtask.agent}"`, failureKind: "error" };
    if (agent.remote) return this.#workRemote(agent, agent.remote, args, this.#labels ? { ...context, provenance: remoteProvenance(argLabels, designationFor(this.#payload.task, subtask, this.#trustedValues)) } : context, item);
    return this.#workWorker(agent, args, argLabels, context, item);
  }

  /** A remote agent's turns, each a call of its A2A tool through the registry. */
  async #workRemote(agent: AgentDefinition, remote: NonNullable<AgentDefinition["remote"]>, args: Record<string, unknown>, context: ToolContext, item?: MapItem): Promise<Attempt> {
    const deps = this.#deps;
    const scope = `${item ? `/item${item.index}` : ""}/remote`;
    const outcome = await runRemoteAgent({
      agent: { ...agent, remote },
      subtask: this.#subtask,
      args,
      call: async (callArgs, turn) => {
        const started = performance.now();
        const outcome = await deps.tools.call(remote.tool, callArgs, { ...context, callId: this.#callIdFor(scope)(turn, remote.tool, callArgs) });
        return { outcome, durationMs: performance.now() - started };
      },
      onCall: (call, replayed) => this.#onToolCall(call, replayed),
      step: item ? immediateStep : this.#step,
      ...(item ? {} : { ask: remoteInputByInterrupt }),
      meter: this.#meter,
      ...(ledgerOf(this.#config) ? { ledger: ledgerOf(this.#config) as RunLedger } : {}),
    });
    return { status: outcome.status, value: outcome.value, summary: outcome.summary, ...(outcome.exact ? { exact: true } : {}), ...(outcome.error !== undefined ? { error: outcome.error, failureKind: outcome.failureKind ?? "error" } : {}) };
  }

  /** A worker's tool-calling loop with the subtask's model, tools, dependencies and trust. */
  async #workWorker(agent: AgentDefinition, args: Record<string, unknown>, argLabels: Record<string, Label>, context: ToolContext, item?: MapItem): Promise<Attempt> {
    const { deps, payload, config, subtask } = { deps: this.#deps, payload: this.#payload, config: this.#config, subtask: this.#subtask };
    const allowedTools = this.#allowedTools;
    const deferred = this.#deferred;
    const outcome = await runAgentLoop(
      {
        agent,
        model: routeForModel(deps.models, agent.model, agent.role ?? "worker"),
        tools: deps.tools,
        task: payload.task,
        subtask,
        args,
        dependencies: payload.dependencies.map(({ id, label, summary, provenance }) => ({ id, label, summary, ...(provenance ? { provenance } : {}) })),
        feedback: payload.feedback,
        ...(this.#live?.answersTask && !item ? { answersTask: this.#live.answersTask } : {}),
        toolContext: context,
        maxSteps: payload.maxSteps,
        promptBudget: payload.promptBudget,
        ...(allowedTools ? { allowedTools } : {}),
        ...(item ? { item } : {}),
        onToolCall: (call, replayed) => {
          if (item) this.#itemWrites?.note(item.index, call);
          return this.#onToolCall(call, replayed);
        },
        step: this.#step,
        ...(this.#pausesInCalls && deferred ? { beforeToolCall: deferred.harden } : {}),
        callIdFor: this.#callIdFor(item ? `/item${item.index}` : ""),
        ...(deps.discovery ? { discovery: deps.discovery } : {}),
        onOffer: (made) => {
          // A map's items each find their tools; the trace keeps the first item's offer.
          if (item && item.index > 0 && this.#offer) return;
          this.#offer = made;
          // A copy: the worker adds to its offer as find_tools finds more.
          if (!this.#mapped) emit(config, { type: "tools-offer", subtaskId: subtask.id, offer: structuredClone(made) });
        },
        board: messagesFor(this.#board.messages(), { subtaskId: subtask.id, agent: subtask.agent }),
        ...(this.#labels
          ? {
              trust: {
                args: argLabels,
                ...(payload.feedbackProvenance ? { feedback: payload.feedbackProvenance } : {}),
                // The plan's untrusted data flow too (a listing's entries, a map's item): a path it passed inside a folder the task names is the plan's choice.
                designation: designationFor(payload.task, subtask, this.#trustedValues, [], Object.fromEntries(Object.entries(args).filter(([name]) => isUntrusted(argLabels[name])))),
                ...(deferred ? { beforeSteeredCall: deferred.harden } : {}),
              },
            }
          : {}),
      },
      callOptions(deps, payload.runId, config, this.#meter, subtask.id),
    );
    const attempt: Attempt = { status: outcome.status, value: outcome.value, summary: outcome.summary, ...(outcome.label ? { label: outcome.label } : {}) };
    if (outcome.exact) attempt.exact = true;
    if (outcome.error !== undefined) attempt.error = outcome.error;
    if (outcome.failureKind !== undefined) attempt.failureKind = outcome.failureKind;
    return attempt;
  }

  /** A direct step's call: its arguments fitted to the tool, the start saved first when untrusted data steers it. */
  async #callTool(tool: string, given: Record<string, unknown>, scope: string, context: ToolContext): Promise<ToolOutcome> {
    const deps = this.#deps;
    const started = performance.now();
    // A referenced value reaches the tool in the type it takes (a number as its decimal text, bytes with their encoding); the trace says so.
    const { args, notes } = deps.tools.has(tool) ? fitToolArgs(deps.tools.spec(tool).function.parameters as Record<string, unknown>, given, this.#encodings) : { args: given, notes: [] };
    // A direct call that will wait for a person because an untrusted reference steered it: the start step is saved first.
    if (this.#deferred && context.provenance && deps.tools.steering(tool, args, context.provenance)) await this.#deferred.harden();
    const outcome = await deps.tools.call(tool, args, { ...context, callId: this.#callIdFor(scope)(1, tool, args) });
    await this.#onToolCall({ tool, args, outcome, durationMs: performance.now() - started, ...(notes.length > 0 ? { notes } : {}) });
    return outcome;
  }

  /** Every call the subtask makes, as it finishes: traced, told, posted (SubtaskCalls), and its written files checked. */
  async #onToolCall(call: AgentToolCall, replayed = false): Promise<void> {
    this.#calls.note(call, replayed);
    await this.#recorder?.note(call);
  }

  /** The tool context of the subtask, or of one item of its map, with its seat at the board. */
  #contextFor(item?: number): ToolContext {
    const { subtask, payload, config } = { subtask: this.#subtask, payload: this.#payload, config: this.#config };
    return {
      ...this.#toolContext,
      board: this.#board.access({
        subtaskId: subtask.id,
        agent: subtask.agent,
        attempt: payload.attempt,
        round: payload.round,
        ...(item !== undefined ? { item } : {}),
        subtasks: () => this.#live?.planIds() ?? [subtask.id],
        agents: this.#deps.agents.names(),
        onPost: (message) => emit(config, { type: "board-post", message }),
      }),
    };
  }

  /** Call ids that a run of this attempt after a crash gives its calls again: the registry settles a call that had begun. */
  #callIdFor(scope: string): (ordinal: number, tool: string, args: unknown) => string {
    const { runId, attempt } = this.#payload;
    return (ordinal, tool, args) => `${runId}/${this.#subtask.id}/${attempt}${scope}/${ordinal}/${createHash("sha256").update(`${tool} ${stableStringify(args)}`).digest("hex").slice(0, 16)}`;
  }
}
