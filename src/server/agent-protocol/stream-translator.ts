import type { StoredEvent } from "../../core/events.js";
import type { StreamMode } from "./wire.js";
import { aiMessageId, aiMessage, GRAPH_ID, ASSISTANT_ID, type MessageDict, type PlanEntry, planEntry, type ProtocolValues, type ResultEntry } from "./views.js";

/** One Server-Sent Event of the protocol: its name (a stream mode's) and its data. */
export interface ProtocolEvent {
  event: string;
  data: unknown;
}

/** Where a stream starts: the thread's conversation before the run, and the run's own turn. */
export interface TranslatorStart {
  runId: string;
  threadName: string;
  modes: ReadonlySet<StreamMode>;
  /** The earlier turns' messages (oldest first). */
  earlier: MessageDict[];
  /** The run's task as a human message. */
  human: MessageDict;
  task: string;
}

/**
 * Turns a run's stored events into the protocol's stream modes, the same way every time: a
 * stream replays the events before its start silently to know the run's state, then sends what
 * the events after it make, so an event's place (its seq, and its index among what it made) is
 * an id a client can resume from. `values` snapshots follow the events that change the plan, the
 * results or the answer; `updates` name the step that changed them; the answer's tokens are
 * message chunks (`messages-tuple`: `messages` events of `[chunk, metadata]`; legacy `messages`:
 * partial and complete messages); `events` are LangChain-style callbacks; `custom` carries
 * troupe's own events. The run's end (its final values, the interrupt it waits on, an error) is
 * the stream driver's, which reads it from the store.
 */
export class StreamTranslator {
  readonly #start: TranslatorStart;
  readonly #plan = new Map<string, PlanEntry>();
  readonly #results: Record<string, ResultEntry> = {};
  #answer: string | null = null;
  /** The answer being written now: the tokens so far, and whether any came. */
  #draft = "";
  #tokens = false;
  #syntheses = 0;
  #status = "queued";

  constructor(start: TranslatorStart) {
    this.#start = start;
  }

  #has(mode: StreamMode): boolean {
    return this.#start.modes.has(mode);
  }

  /** The run's values as its events have them so far. */
  values(): ProtocolValues {
    const plan = [...this.#plan.values()].map((entry) => ({ ...entry, status: this.#results[entry.id]?.status ?? entry.status }));
    return {
      messages: [...this.#start.earlier, this.#start.human, ...(this.#answer !== null ? [aiMessage(this.#start.runId, this.#answer)] : [])],
      run_id: this.#start.runId,
      task: this.#start.task,
      plan,
      results: { ...this.#results },
      answer: this.#answer,
      status: this.#status,
      stop_reason: null,
    };
  }

  #metadata(node: string): Record<string, unknown> {
    return { run_id: this.#start.runId, thread_id: this.#start.threadName, graph_id: GRAPH_ID, assistant_id: ASSISTANT_ID, langgraph_node: node };
  }

  #chunk(text: string): Record<string, unknown> {
    return { type: "AIMessageChunk", id: aiMessageId(this.#start.runId), content: text, additional_kwargs: {}, response_metadata: {}, tool_calls: [], invalid_tool_calls: [], tool_call_chunks: [] };
  }

  /** The events a stored event makes, in a fixed order: LangChain callbacks, messages, updates, values, troupe's own. */
  feed(event: StoredEvent): ProtocolEvent[] {
    const out: ProtocolEvent[] = [];
    const callback = (name: string, fields: Record<string, unknown>): void => {
      if (this.#has("events")) out.push({ event: "events", data: { event: name, run_id: this.#start.runId, metadata: this.#metadata(String(fields.name ?? GRAPH_ID)), tags: [], data: {}, ...fields } });
    };
    let update: Record<string, unknown> | undefined;
    let snapshot = false;
    switch (event.type) {
      case "run-start":
        this.#status = "running";
        callback("on_chain_start", { name: GRAPH_ID, data: { input: { task: this.#start.task } } });
        snapshot = true;
        break;
      case "step-start":
        callback("on_chain_start", { name: event.step });
        if (event.step === "synthesizer") this.#beginAnswer(out);
        break;
      case "step-end":
        callback("on_chain_end", { name: event.step, data: { output: { outcome: event.outcome, duration_ms: event.durationMs, ...(event.error ? { error: event.error } : {}) } } });
        break;
      case "plan-ready":
        this.#plan.clear();
        for (const subtask of event.subtasks) this.#plan.set(subtask.id, planEntry(subtask, this.#results[subtask.id]?.status ?? "pending"));
        update = { planner: { plan: this.values().plan } };
        snapshot = true;
        break;
      case "subtask-start":
        this.#results[event.subtaskId] = { status: "running" };
        update = { execute: { results: { [event.subtaskId]: this.#results[event.subtaskId] } } };
        break;
      case "subtask-end":
        this.#results[event.subtaskId] = { status: event.status, ...(event.summary !== undefined ? { summary: event.summary } : {}), ...(event.error !== undefined ? { error: event.error } : {}) };
        update = { execute: { results: { [event.subtaskId]: this.#results[event.subtaskId] } } };
        snapshot = true;
        break;
      case "subtask-skip":
        this.#results[event.subtaskId] = { status: "skipped", error: event.reason };
        update = { execute: { results: { [event.subtaskId]: this.#results[event.subtaskId] } } };
        break;
      case "critic-verdict":
        update = { critic: { review: { passed: event.verdict.passed, confidence: event.verdict.confidence, issues: event.verdict.issues, redo: event.verdict.redo } } };
        break;
      case "tool-call":
        callback(event.ok ? "on_tool_end" : "on_tool_error", { name: event.tool, data: { output: event.preview }, metadata: this.#metadata(event.agent ?? "execute") });
        break;
      case "answer-token":
        this.#token(event.text, out);
        callback("on_chat_model_stream", { name: "synthesizer", data: { chunk: this.#chunk(event.text) } });
        break;
      case "answer":
        this.#finishAnswer(event.text, out);
        update = { synthesizer: { answer: event.text, messages: [aiMessage(this.#start.runId, event.text)] } };
        snapshot = true;
        break;
      default:
        break;
    }
    if (update && this.#has("updates")) out.push({ event: "updates", data: update });
    if (snapshot && this.#has("values")) out.push({ event: "values", data: this.values() });
    if (this.#has("custom")) out.push({ event: "custom", data: event });
    return out;
  }

  /** A new answer starts: a rewritten one (after a review or a rejection) first removes the earlier text from the client's message. */
  #beginAnswer(out: ProtocolEvent[]): void {
    this.#syntheses += 1;
    const rewrite = this.#syntheses > 1 || this.#answer !== null;
    this.#draft = "";
    this.#tokens = false;
    if (rewrite && this.#has("messages-tuple")) out.push({ event: "messages", data: [{ type: "remove", id: aiMessageId(this.#start.runId) }, this.#metadata("synthesizer")] });
  }

  #token(text: string, out: ProtocolEvent[]): void {
    const first = !this.#tokens;
    this.#tokens = true;
    this.#draft += text;
    if (this.#has("messages-tuple")) out.push({ event: "messages", data: [this.#chunk(text), this.#metadata("synthesizer")] });
    if (this.#has("messages")) {
      if (first) out.push({ event: "messages/metadata", data: { [aiMessageId(this.#start.runId)]: { metadata: this.#metadata("synthesizer") } } });
      out.push({ event: "messages/partial", data: [{ ...aiMessage(this.#start.runId, this.#draft) }] });
    }
  }

  #finishAnswer(text: string, out: ProtocolEvent[]): void {
    this.#answer = text;
    // An answer that came without tokens (the fast route's, a written one) comes whole; one whose tokens are not all of it (a typed
    // answer's JSON) replaces them; one that streamed whole is already with the client.
    if (this.#has("messages-tuple") && (!this.#tokens || this.#draft !== text)) {
      if (this.#tokens) out.push({ event: "messages", data: [{ type: "remove", id: aiMessageId(this.#start.runId) }, this.#metadata("synthesizer")] });
      out.push({ event: "messages", data: [this.#chunk(text), this.#metadata("synthesizer")] });
    }
    if (this.#has("messages")) {
      if (!this.#tokens) out.push({ event: "messages/metadata", data: { [aiMessageId(this.#start.runId)]: { metadata: this.#metadata("synthesizer") } } });
      out.push({ event: "messages/complete", data: [aiMessage(this.#start.runId, text)] });
    }
    this.#tokens = true;
  }
}
