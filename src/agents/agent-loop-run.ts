import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, type ToolCall } from "@langchain/core/messages";
import type { Runnable } from "@langchain/core/runnables";
import { BudgetExhaustedError } from "../core/budget.js";
import { isUntrusted, type Label, TRUSTED } from "../core/provenance.js";
import { SPOTLIGHT_RULE } from "../core/spotlight.js";
import { LIMITS } from "../core/limits.js";
import { fitToSchema } from "../core/schema-fit.js";
import { stableStringify, truncate } from "../core/text.js";
import type { ToolOutcome } from "../tools/define-tool.js";
import { ToolIndex } from "../tools/discovery.js";
import { isEmptyAnswer } from "../providers/answer-shape.js";
import type { ModelCandidate } from "../providers/registry.js";
import type { UsageMeter } from "./model-call.js";
import { type CallOptions, callModel, ContextOverflowError } from "./model-call.js";
import { fitToBudget, HANDLE_KEY, prepareValue } from "./prompt-budget.js";
import { invokeStructured } from "./structured-output.js";
import { FIND_TOOLS, FIND_TOOLS_SPEC, findMoreTools, offerTools, type ToolDiscovery } from "./tool-offer.js";
import { callsOf, EMPTY_ANSWER_NUDGE, modelStep, substituteHandles, withKnownNames } from "./agent-loop-calls.js";
import { countTextTokens } from "../providers/token-count.js";
import { bounded, conversation, effectiveBudget, keptBlocks, type PreparedInput, type ToolResult, type Turn, agentLoopPrompt } from "./agent-loop-conversation.js";
import { AgentLoopProvenance } from "./agent-loop-provenance.js";
import { answerValue, prefixedOutcome, readSubmission, SUBMIT_RESULT, SUBMIT_RESULT_SPEC, SubmittedResult } from "./agent-loop-result.js";
import type { DurableStep, ModelStep, ToolStep, AgentLoopInput, AgentLoopOutcome, AgentToolCall } from "./agent-loop-types.js";

type MarkedCall = ToolCall & { id: string; sameAs?: string };

/**
 * One worker's loop, in named steps: each turn asks the model (`#askStep`), reads its calls
 * (known names, calls spelled in text), and then settles a plain answer (`#plainAnswer`), a
 * submission (`#submission`), or runs each call (`#findToolsCall`, `#toolCall`). The fields are
 * what the turns share: the offer, the conversation, the handles to values, the calls made.
 * The loop's contract is runAgentLoop's (src/agents/agent-loop.ts).
 */
export class AgentLoopRun {
  readonly #input: AgentLoopInput;
  readonly #options: CallOptions;
  readonly #step: DurableStep;
  /** What the model has read, and so what its calls and its result carry (absent: no trust policy). */
  readonly #provenance: AgentLoopProvenance | undefined;
  readonly #allowed: string[];
  readonly #offered: Awaited<ReturnType<typeof offerTools>>;
  readonly #offeredSet: Set<string>;
  readonly #toolCalls: AgentToolCall[] = [];
  readonly #prepared: PreparedInput;
  readonly #handles: Map<string, unknown>;
  /** Handles to results that were cut for a checkpoint and replayed after a pause: their full value is gone. */
  readonly #lost = new Set<string>();
  /** The tools' own summaries of their outputs, by handle. */
  readonly #summaries = new Map<string, string>();
  /** The prompt budget: the run's, fitted to a small context window with the offered tools' definitions counted (again when find_tools offers more). */
  #budget: number;
  readonly #turns: Turn[] = [];
  /** How often each call (tool and arguments) was made: a third time stops the loop. */
  readonly #seen = new Map<string, number>();
  #discovery: ToolDiscovery | undefined;
  #system: SystemMessage;
  #specs: ReturnType<AgentLoopRun["specsNow"]>;
  #bound = new Map<ModelCandidate, Runnable<BaseLanguageModelInput, unknown>>();

  private constructor(input: AgentLoopInput, options: CallOptions, step: DurableStep, provenance: AgentLoopProvenance | undefined, allowed: string[], offered: Awaited<ReturnType<typeof offerTools>>) {
    this.#input = input;
    this.#options = options;
    this.#step = step;
    this.#provenance = provenance;
    this.#allowed = allowed;
    this.#offered = offered;
    this.#offeredSet = new Set(offered.names);
    this.#discovery = input.discovery;
    this.#system = this.#systemNow();
    this.#prepared = {
      input,
      args: Object.entries(input.args).map(([name, value]) => [name, prepareValue(value)]),
      notOffered: () => (offered.findTools ? allowed.length - this.#offeredSet.size : 0),
      labels: Object.fromEntries(Object.keys(input.args).map((name) => [name, provenance?.argument(name) ?? TRUSTED])),
    };
    this.#handles = new Map<string, unknown>(Object.entries(input.args).map(([name, value]) => [`args.${name}`, value]));
    this.#budget = input.promptBudget ?? LIMITS.promptTokenBudget;
    this.#specs = this.specsNow();
  }

  /** Sets a worker up: what it has read so far, the tools it may use, and those it is offered (the offer is told). */
  static async open(input: AgentLoopInput, options: CallOptions, step: DurableStep): Promise<AgentLoopRun> {
    const provenance = input.trust
      ? new AgentLoopProvenance(
          input.trust,
          input.tools,
          { args: Object.keys(input.args), dependencies: input.dependencies, feedback: input.feedback.length > 0, board: input.board ?? [] },
          `${input.subtask.id} (${input.agent.name})`,
        )
      : undefined;
    const allowed = input.agent.tools.filter((name) => input.tools.has(name) && name !== SUBMIT_RESULT && name !== FIND_TOOLS && (input.allowedTools?.includes(name) ?? true));
    // What it is offered: its agent's own tools and those the plan named, and — for a large catalogue — the most relevant of the rest.
    const offered = await offerTools(allowed, input.agent.coreTools ?? input.agent.tools, input.subtask, input.args, input.discovery);
    if (offered.offer) input.onOffer?.(offered.offer);
    const run = new AgentLoopRun(input, options, step, provenance, allowed, offered);
    await run.#fitBudget();
    return run;
  }

  /** The loop: a turn per model step, until an outcome, or `maxSteps` steps. */
  async run(): Promise<AgentLoopOutcome> {
    for (let turnNumber = 1; turnNumber <= this.#input.maxSteps; turnNumber += 1) {
      const ended = await this.#turn(turnNumber);
      if (ended) return ended;
    }
    return this.#failed(`stopped: no outcome after ${this.#input.maxSteps} steps`, this.#input.maxSteps);
  }

  /** One turn: ask the model, read its calls, then settle its answer or run its calls. An outcome ends the loop. */
  async #turn(turnNumber: number): Promise<AgentLoopOutcome | undefined> {
    const reply = await this.#askStep();
    if ("error" in reply) return reply.refused ? this.#failed(reply.error, turnNumber, "refused") : this.#failed(`model call failed: ${reply.error}`, turnNumber);
    let response = (reply as { message: AIMessage }).message;
    const known = new Set([...this.#offeredSet, SUBMIT_RESULT, FIND_TOOLS]);
    const named = withKnownNames(response, known);
    if (named.renamed.length > 0) response = named.message;
    const renamedNotes = new Map(named.renamed.flatMap(({ id, note }) => (id !== undefined ? [[id, note] as const] : [])));
    const { calls, spelled } = callsOf(response, known, turnNumber);
    // Calls spelled out in the text become real ones in the conversation, so each result answers a call (thinking blocks stay first).
    if (spelled) response = new AIMessage({ content: keptBlocks(response), tool_calls: calls.map(({ sameAs: _sameAs, ...call }) => call) });
    if (calls.length === 0) return this.#plainAnswer(response, turnNumber);
    const turn: Turn = { response, results: [] };
    this.#turns.push(turn);
    const distinct = calls.filter((call) => call.sameAs === undefined);
    const submission = distinct.length === 1 && distinct[0]?.name === SUBMIT_RESULT ? distinct[0] : undefined;
    if (submission) return this.#submission(submission, calls, turn, turnNumber);
    return this.#runCalls(calls, turn, renamedNotes, turnNumber);
  }

  /** The model step of a turn: an answer, asked for once more when it is empty, as in every role. */
  async #askStep(): Promise<ModelStep> {
    const { value: reply, replayed } = await modelStep(this.#step, this.#options, async (meter) => {
      const first = await this.#ask(meter);
      // What comes back from the second ask is taken as it is.
      return isEmptyAnswer(first.message) ? (await this.#ask(meter, [first.message, new HumanMessage(EMPTY_ANSWER_NUDGE)])).message : first.message;
    });
    this.#account(reply, replayed);
    return reply;
  }

  /**
   * One model call on the conversation so far (with `extra` messages after it). A prompt the
   * model's context window cannot take — the provider said so, or it would not fit — is sent
   * again once with its history compacted: earlier tool results as their handles and summaries.
   */
  async #ask(meter: UsageMeter, extra: BaseMessage[] = []): Promise<{ messages: BaseMessage[]; message: AIMessage }> {
    const input = this.#input;
    const render = (compact: boolean) => fitToBudget((detail) => [...conversation(this.#system, this.#prepared, this.#turns, detail, compact), ...extra], compact ? Math.max(1, Math.floor(this.#budget / 2)) : this.#budget);
    const fitted = await render(false);
    const call = async (messages: BaseMessage[]) => ({ messages, message: (await callModel(input.model, messages, { ...this.#options, meter }, { prepare: this.#prepare })).message });
    if (!fitted.overBudget) {
      try {
        return await call(fitted.messages);
      } catch (error) {
        if (!(error instanceof ContextOverflowError) || this.#turns.length === 0) throw error;
        meter.note({ kind: "retry", role: input.model.role, model: String(error.data.model ?? ""), attempt: 1, reason: "the prompt was larger than the model's context window: earlier tool results compacted to their handles", delayMs: 0, subtaskId: input.subtask.id, at: Date.now() });
      }
    }
    return call((await render(true)).messages);
  }

  /** A candidate's model with the offered tools bound, in the offer's order (the same from one subtask to the next). */
  readonly #prepare = (candidate: ModelCandidate): Runnable<BaseLanguageModelInput, unknown> => {
    let runnable = this.#bound.get(candidate);
    if (!runnable) {
      if (typeof candidate.model.bindTools !== "function") throw new Error(`the model ${candidate.model.getName()} does not support tool calling`);
      runnable = candidate.model.bindTools(this.#specs);
      this.#bound.set(candidate, runnable);
    }
    return runnable;
  };

  private specsNow() {
    const input = this.#input;
    return [...this.#allowed.filter((name) => this.#offeredSet.has(name)).map((name) => input.tools.spec(name)), ...(this.#offered.findTools ? [FIND_TOOLS_SPEC] : []), SUBMIT_RESULT_SPEC];
  }

  #systemNow(): SystemMessage {
    return new SystemMessage(agentLoopPrompt(this.#input.agent, this.#input.maxSteps, this.#provenance?.tainted ?? false));
  }

  /** A step's usage into the run's meter (and, replayed after a pause, its budget); a spent budget stops the run, not just this subtask. */
  #account(reply: ModelStep, replayed: boolean): void {
    const options = this.#options;
    options.meter.add(reply.usage);
    if (replayed) {
      // Made before a pause: the run's metrics and budget have not counted it yet.
      options.meter.incidents.push(...reply.incidents);
      options.ledger?.carry(reply.usage);
    }
    if ("budget" in reply) throw new BudgetExhaustedError(reply.budget);
  }

  #labelled(): { label?: Label } {
    return this.#provenance ? { label: this.#provenance.result() } : {};
  }

  #ended(steps: number): Pick<AgentLoopOutcome, "toolCalls" | "steps" | "offer" | "label"> {
    const offer = this.#offered.offer;
    return { toolCalls: this.#toolCalls, steps, ...(offer ? { offer } : {}), ...this.#labelled() };
  }

  #failed(error: string, steps: number, failureKind: AgentLoopOutcome["failureKind"] = "error", summary = ""): AgentLoopOutcome {
    return { status: "failed", summary, error, failureKind, ...this.#ended(steps) };
  }

  /** The outcome a valid submission stands for, or the problem to tell the model. */
  #settle(submitted: SubmittedResult, steps: number): AgentLoopOutcome | { problem: string } {
    const read = readSubmission(submitted, { handles: this.#handles, lost: this.#lost, summaries: this.#summaries });
    if ("problem" in read) return read;
    if (read.status === "done") return { ...read, ...this.#ended(steps) };
    return this.#failed(read.reason, steps, read.status === "unable" ? "unable" : "error", truncate(`${read.status}: ${read.reason}`, LIMITS.previewChars));
  }

  /** A plain-text answer: its prefix says how it ended, or the model is asked, once, through structured output. */
  async #plainAnswer(response: AIMessage, turnNumber: number): Promise<AgentLoopOutcome> {
    const text = (typeof response.content === "string" ? response.content : response.text).trim();
    const declared = prefixedOutcome(text);
    let submitted: SubmittedResult;
    if (declared) submitted = declared;
    else {
      const { value: asked, replayed } = await modelStep(this.#step, this.#options, async (meter) => {
        const { messages } = await fitToBudget((detail) => conversation(this.#system, this.#prepared, this.#turns, detail, false), this.#budget);
        const question = new HumanMessage(`Report how the subtask ended by calling ${SUBMIT_RESULT}: done with the result, or failed or unable with the reason.`);
        const answer = await invokeStructured(
          { route: this.#input.model, schema: SubmittedResult, name: SUBMIT_RESULT, description: SUBMIT_RESULT_SPEC.function.description, messages: [...messages, response, question] },
          { ...this.#options, meter },
        );
        return new AIMessage({ content: "", tool_calls: [{ id: "submit_result_asked", name: SUBMIT_RESULT, args: answer, type: "tool_call" }] });
      });
      this.#account(asked, replayed);
      if ("error" in asked) {
        if (asked.refused) return this.#failed(asked.error, turnNumber, "refused");
        return this.#failed(`the worker answered in plain text and did not say how the subtask ended (${asked.error}): ${truncate(text, 300)}`, turnNumber);
      }
      const args = (asked as { message: AIMessage }).message.tool_calls?.[0]?.args;
      const parsed = SubmittedResult.safeParse(args);
      if (!parsed.success) return this.#failed(`the worker's outcome was not valid: ${parsed.error.message}`, turnNumber);
      // A plain answer the model says is done is the text it wrote, unless it named a handle; an
      // empty one is left empty, for the subtask to judge against what needs its value.
      if (parsed.data.status === "done" && !parsed.data.from && !parsed.data.result?.trim()) {
        const ended = this.#ended(turnNumber);
        return text === "" ? { status: "done", value: "", summary: "", ...ended } : { status: "done", value: answerValue(text), summary: truncate(text, LIMITS.previewChars), ...ended };
      }
      submitted = parsed.data;
    }
    const settled = this.#settle(submitted, turnNumber);
    return "problem" in settled ? this.#failed(`the worker's outcome was not valid: ${settled.problem}`, turnNumber) : settled;
  }

  /** A submit_result call alone: its outcome, or the problem told to the model as that call's result (the loop goes on). */
  #submission(submission: MarkedCall, calls: MarkedCall[], turn: Turn, turnNumber: number): AgentLoopOutcome | undefined {
    const fitted = fitToSchema(submission.args, SUBMIT_RESULT_SPEC.function.parameters as Record<string, unknown>).value;
    const parsed = SubmittedResult.safeParse(fitted);
    const settled = parsed.success ? this.#settle(parsed.data, turnNumber) : { problem: `the arguments do not match ${SUBMIT_RESULT}: ${parsed.error.issues.map((issue) => `${issue.path.join(".") || "args"}: ${issue.message}`).join("; ")}` };
    if (!("problem" in settled)) return settled;
    const error: ToolOutcome = { ok: false, error: { code: "invalid_result", message: settled.problem } };
    for (const call of calls) turn.results.push({ id: call.id, name: SUBMIT_RESULT, outcome: error, handle: "", text: JSON.stringify(error) });
    return undefined;
  }

  /** A reply's tool calls in order; a repeated call is answered with its first result, a third identical call stops the loop. */
  async #runCalls(calls: MarkedCall[], turn: Turn, renamedNotes: ReadonlyMap<string, string>, turnNumber: number): Promise<AgentLoopOutcome | undefined> {
    /** The results of this reply's calls by id, for the repeats of a call (run once). */
    const answered = new Map<string, ToolResult>();
    for (const call of calls) {
      const earlier = call.sameAs !== undefined ? answered.get(call.sameAs) : undefined;
      if (earlier) {
        // The same call twice in one reply (parallel duplicates): it ran once; the repeat gets that result.
        turn.results.push({ ...earlier, id: call.id });
        continue;
      }
      if (call.name === SUBMIT_RESULT) {
        const error: ToolOutcome = { ok: false, error: { code: "invalid_result", message: `call ${SUBMIT_RESULT} alone, once your other tool calls have returned` } };
        turn.results.push({ id: call.id, name: SUBMIT_RESULT, outcome: error, handle: "", text: JSON.stringify(error) });
        continue;
      }
      const key = `${call.name} ${stableStringify(call.args)}`;
      const count = (this.#seen.get(key) ?? 0) + 1;
      this.#seen.set(key, count);
      if (count >= LIMITS.repeatLimit) {
        return this.#failed(`stopped: ${call.name} was called ${count} times with the same arguments ${truncate(stableStringify(call.args), 200)}`, turnNumber);
      }
      const result = call.name === FIND_TOOLS && !this.#input.tools.has(FIND_TOOLS) ? await this.#findToolsCall(call) : await this.#toolCall(call, renamedNotes);
      if ("status" in result) return result.status === "rejected" ? this.#failed(result.message, turnNumber, "rejected") : undefined;
      turn.results.push(result);
      answered.set(call.id, result);
    }
    return undefined;
  }

  /** find_tools, the worker's own search of the tools it may use: nothing runs, nothing outside it changes; what it finds is offered from the next step. */
  async #findToolsCall(call: MarkedCall): Promise<ToolResult> {
    const input = this.#input;
    const query = typeof call.args.query === "string" ? call.args.query : "";
    const names = query.trim() === "" ? [] : await this.#findTools(query);
    const found = names.map((name) => ({ name, description: truncate(input.tools.spec(name).function.description, 200) }));
    const reply: ToolOutcome =
      query.trim() === ""
        ? { ok: false, error: { code: "invalid_arguments", message: "find_tools needs a query: what the tool should do" } }
        : { ok: true, value: { found }, summary: names.length > 0 ? `found ${names.join(", ")}: offered from your next step` : "no other tool of yours matches; try other words" };
    return { id: call.id, name: FIND_TOOLS, outcome: reply, handle: "", text: JSON.stringify(reply) };
  }

  async #findTools(query: string): Promise<string[]> {
    const input = this.#input;
    const offer = this.#offered.offer;
    this.#discovery ??= { index: new ToolIndex(this.#allowed.map((name) => input.tools.spec(name))), threshold: LIMITS.toolDiscoveryThreshold, topK: LIMITS.toolDiscoveryTopK };
    const names = await findMoreTools(query, this.#allowed, this.#offeredSet, this.#discovery);
    for (const name of names) this.#offeredSet.add(name);
    if (offer) {
      offer.found.push({ query: truncate(query, 200), names });
      input.onOffer?.(offer);
    }
    if (names.length > 0) {
      this.#specs = this.specsNow();
      this.#bound = new Map();
      await this.#fitBudget();
    }
    return names;
  }

  async #fitBudget(): Promise<void> {
    const runBudget = this.#input.promptBudget ?? LIMITS.promptTokenBudget;
    this.#budget = this.#input.model.candidates[0]?.contextWindow ? effectiveBudget(runBudget, this.#input.model, await countTextTokens(JSON.stringify(this.#specs))) : runBudget;
  }

  /**
   * A tool call as a durable step, through the registry (handles replaced by their values; an
   * unknown handle refused there, so the audit sees it); its result gets a handle and a label.
   * A person's rejection ends the attempt.
   */
  async #toolCall(call: MarkedCall, renamedNotes: ReadonlyMap<string, string>): Promise<ToolResult | { status: "rejected"; message: string }> {
    const input = this.#input;
    const provenance = this.#provenance;
    const called = provenance?.callProvenance(call.args);
    // A call that will wait for a person because untrusted data steered it: the graph makes the steps durable first.
    const harden = provenance?.trust.beforeSteeredCall;
    if (harden && input.tools.mayAskTrust(call.name) && input.tools.steering(call.name, call.args, called)) await harden();
    await input.beforeToolCall?.();
    // The live call, with the full value (for handles); the step keeps a bounded copy.
    const fresh: { call?: AgentToolCall } = {};
    const { value: kept, replayed } = await this.#step<ToolStep>(
      "worker_tool",
      async () => {
        const started = performance.now();
        let outcome: ToolOutcome;
        let args: unknown = call.args;
        const substituted = substituteHandles(input.tools, call.name, call.args, this.#handles, this.#lost);
        const withProvenance = called ? { ...input.toolContext, provenance: called } : input.toolContext;
        const context = input.callIdFor ? { ...withProvenance, callId: input.callIdFor(this.#toolCalls.length + 1, call.name, call.args) } : withProvenance;
        if ("error" in substituted) {
          // Refused before it runs, but through the registry: the permission check and the audit trail see it.
          outcome = await input.tools.call(call.name, call.args, context, { refusal: { code: "unknown_handle", message: substituted.error } });
        } else {
          args = substituted.args;
          outcome = await input.tools.call(call.name, substituted.args, context);
        }
        const durationMs = performance.now() - started;
        const fitted = [...(renamedNotes.has(call.id) ? [renamedNotes.get(call.id) as string] : []), ...("notes" in substituted ? substituted.notes : [])];
        const notes = fitted.length > 0 ? fitted : undefined;
        fresh.call = { tool: call.name, args, outcome, durationMs, ...("handles" in substituted && substituted.handles ? { handles: substituted.handles } : {}), ...(notes ? { notes } : {}) };
        // The model's own arguments are kept: a handle stands for a value the checkpoint need not hold twice.
        return { tool: call.name, args: call.args, outcome, durationMs, cut: false, ...(notes ? { notes } : {}) };
      },
      (done) => {
        // What a checkpoint keeps: a large value as its preview.
        const keptOutcome = bounded(done.outcome);
        return { ...done, outcome: keptOutcome.outcome, cut: keptOutcome.cut };
      },
    );
    const live = fresh.call;
    const record: AgentToolCall = live ?? { tool: kept.tool, args: kept.args, outcome: kept.outcome, durationMs: kept.durationMs, ...(kept.notes ? { notes: kept.notes } : {}) };
    this.#toolCalls.push(record);
    await input.onToolCall?.(record, replayed);
    const handle = `results.${this.#toolCalls.length}`;
    // What the model reads of this call now carries its label.
    const label = provenance?.note(handle, call.name, record.args, record.outcome);
    if (isUntrusted(label) && !this.#system.text.includes(SPOTLIGHT_RULE)) this.#system = this.#systemNow();
    if (record.outcome.ok) {
      if (live === undefined && kept.cut) this.#lost.add(handle);
      else this.#handles.set(handle, record.outcome.value);
      this.#summaries.set(handle, record.outcome.summary);
    } else if (record.outcome.error.code === "rejected") {
      // A person said no: not retried in this attempt; the critic and the planner hear of it.
      return { status: "rejected", message: record.outcome.error.message };
    }
    const shown = shownReply(record.outcome, handle);
    return { id: call.id, name: call.name, outcome: record.outcome, handle, text: JSON.stringify(shown), ...(label ? { label } : {}) };
  }
}

/**
 * A tool outcome as the model reads it, with its handle. A summary that only repeats the value
 * (a lookup's JSON, a figure) is left out: it would be the same tokens twice on every call.
 */
function shownReply(outcome: ToolOutcome, handle: string): Record<string, unknown> {
  const { label: _label, ...reply } = outcome;
  if (!reply.ok) return reply;
  const valueText = typeof reply.value === "string" ? reply.value : JSON.stringify(reply.value);
  const { summary, ...rest } = reply;
  return summary === valueText ? { ...rest, [HANDLE_KEY]: handle } : { ...reply, [HANDLE_KEY]: handle };
}
