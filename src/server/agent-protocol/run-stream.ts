import { PassThrough } from "node:stream";
import type { FastifyBaseLogger, FastifyReply } from "fastify";
import { ConflictError, InputError, TroupeError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import type { InterruptInfo } from "../../core/run.js";
import { threadNameOfRun } from "../../core/thread-key.js";
import type { RunRecord } from "../../store/index.js";
import type { Principal } from "../config.js";
import { followRun, isResting, type RunFeed } from "../run-follow.js";
import { isWaiting } from "./runs.js";
import { type ProtocolEvent, StreamTranslator } from "./stream-translator.js";
import type { AgentThreads } from "./threads.js";
import { humanMessage, interruptOf, TURNS_SHOWN, turnMessages } from "./views.js";
import type { StreamMode } from "./wire.js";

/** A stream further behind than this is closed; the client resumes it with Last-Event-ID (a values event holds the conversation, so the room is for several). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
const HEARTBEAT_MS = 15_000;
const PAGE = 1_000;

/** A place in a run's stream: an event's seq, and the index of a protocol event among those it made. */
export interface StreamPosition {
  seq: number;
  index: number;
}

/** Where a stream starts: after the run's event `startAfter` (the ones before are read silently), and, resuming, after a position already sent. */
export interface StreamStart {
  startAfter: number;
  resumeAfter?: StreamPosition;
}

export interface RunStreamOptions {
  feed: RunFeed;
  threads: AgentThreads;
  principal: Principal;
  record: RunRecord;
  start: StreamStart;
  modes: ReadonlySet<StreamMode>;
  cancelOnDisconnect: boolean;
  log: FastifyBaseLogger;
}

/** A run's stored events after `after`, every page. */
async function storedEvents(feed: RunFeed, runId: string, after = 0): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  for (let page = await feed.tasks.troupe.store.events.list(runId, after, PAGE); page.length > 0; page = page.length < PAGE ? [] : await feed.tasks.troupe.store.events.list(runId, (events.at(-1) as StoredEvent).seq, PAGE)) {
    events.push(...page);
  }
  return events;
}

/**
 * Where a join of a run's stream starts. A stream covers one stretch of the run: from its start,
 * or from a resume, to the next time it rests (ends, or waits for a person). Without
 * Last-Event-ID a join gets what comes from now on (LangGraph's join); `-1` replays the stretch
 * the run is in (or ended last) from its beginning; an event's id resumes after it.
 */
export async function joinStart(feed: RunFeed, runId: string, lastEventId: string | undefined): Promise<StreamStart> {
  const events = await storedEvents(feed, runId);
  const lastSeq = events.at(-1)?.seq ?? 0;
  const ends = events.filter((event) => event.type === "run-end").map((event) => event.seq);
  if (lastEventId === undefined) return { startAfter: lastSeq };
  const text = lastEventId.trim();
  if (text === "-1") return { startAfter: (events.at(-1)?.type === "run-end" ? ends.at(-2) : ends.at(-1)) ?? 0 };
  const match = /^(\d{1,15})(?:-(\d{1,6}))?$/.exec(text);
  if (!match) throw new InputError("last_event_id_invalid", "Last-Event-ID is the id of an event of this run's stream (<seq>-<index>), or -1 to replay it");
  const seq = Number(match[1]);
  if (seq > lastSeq) throw new InputError("last_event_id_invalid", `Last-Event-ID ${text.slice(0, 40)} is past the run's last event (${lastSeq})`);
  const index = match[2] === undefined ? Number.MAX_SAFE_INTEGER : Number(match[2]);
  return { startAfter: ends.filter((end) => end < seq).at(-1) ?? 0, resumeAfter: { seq, index } };
}

function after(position: StreamPosition, than: StreamPosition | undefined): boolean {
  return than === undefined || position.seq > than.seq || (position.seq === than.seq && position.index > than.index);
}

/** The earlier turns of the run's thread (the caller's), oldest first, and the run's own task. */
async function translatorFor(options: RunStreamOptions): Promise<StreamTranslator> {
  const { record } = options;
  const runs = await options.threads.runsOf(options.principal, record.threadId);
  const index = runs.findIndex((run) => run.id === record.id);
  const earlier = index > 0 ? runs.slice(Math.max(0, index - (TURNS_SHOWN - 1)), index) : [];
  return new StreamTranslator({
    runId: record.id,
    threadName: threadNameOfRun(record),
    modes: options.modes,
    earlier: turnMessages(earlier.map((run) => ({ runId: run.id, task: run.task, answer: run.answer, status: run.status }))),
    human: humanMessage(record.id, record.task),
    task: record.task,
  });
}

/** What a run waits on now, as LangGraph interrupts (ids from its checkpoint); what it waited on then, when it no longer does. */
async function interruptsOf(feed: RunFeed, principal: Principal, runId: string, asked: readonly InterruptInfo[], seq: number): Promise<ReturnType<typeof interruptOf>[]> {
  const record = await feed.tasks.record(principal, runId);
  if (isWaiting(record)) {
    const pending = await feed.tasks.troupe.pendingInterrupts(record.threadId);
    if (pending.length > 0) return pending.map((interrupt) => interruptOf(interrupt.id, interrupt));
    return [interruptOf(`${runId}:${seq}`, record.interrupt)];
  }
  return asked.map((info, index) => interruptOf(`${runId}:${seq}:${index}`, info));
}

/**
 * The events a run's end makes: its values with its status, then — waiting for a person — the
 * interrupt (as an update and as values holding only `__interrupt__`, which LangGraph's clients
 * merge into what they show), or — failed — an `error` event, which ends a client's stream as an
 * error.
 */
async function endEvents(options: RunStreamOptions, translator: StreamTranslator, event: StoredEvent & { type: "run-end" }, asked: readonly InterruptInfo[], live: boolean): Promise<ProtocolEvent[]> {
  const out: ProtocolEvent[] = [];
  const waits = event.status === "interrupted" && asked.length > 0;
  if (options.modes.has("values")) out.push({ event: "values", data: { ...translator.values(), status: waits ? "interrupted" : event.status, stop_reason: event.stopReason } });
  if (waits && (options.modes.has("values") || options.modes.has("updates"))) {
    const interrupts = live ? await interruptsOf(options.feed, options.principal, options.record.id, asked, event.seq) : asked.map((info, index) => interruptOf(`${options.record.id}:${event.seq}:${index}`, info));
    if (options.modes.has("updates")) out.push({ event: "updates", data: { __interrupt__: interrupts } });
    if (options.modes.has("values")) out.push({ event: "values", data: { __interrupt__: interrupts } });
  }
  if (event.status === "failed") {
    const record = live ? await options.feed.tasks.troupe.store.runs.get(options.record.id) : undefined;
    out.push({ event: "error", data: { error: event.stopReason ?? "failed", message: record?.error ?? `the run stopped: ${event.stopReason ?? "failed"}` } });
  }
  return out;
}

function formatted(position: StreamPosition, event: ProtocolEvent): string {
  return `id: ${position.seq}-${position.index}\nevent: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/**
 * Answers with a run's stream as Server-Sent Events: `metadata` first, then what each of its
 * events makes (the translator's), each with its id, until the run rests. The events before the
 * start are read silently; a client gone away leaves the run going unless it asked for a cancel
 * on disconnect (`on_disconnect: cancel`, as `useStream` does by default).
 */
export async function sendRunStream(reply: FastifyReply, options: RunStreamOptions): Promise<FastifyReply> {
  const { feed, principal, record, start } = options;
  const translator = await translatorFor(options);
  let asked: InterruptInfo[] = [];
  const remember = (event: StoredEvent): void => {
    if (event.type === "run-start") asked = [];
    if (event.type === "approval-request") asked.push(event.interrupt);
  };
  for (const event of await storedEvents(feed, record.id)) {
    if (event.seq > start.startAfter) break;
    remember(event);
    translator.feed(event);
  }
  const stream = new PassThrough();
  const abort = new AbortController();
  let closedByServer = false;
  let ended = false;
  const write = (text: string): void => {
    if (ended) return;
    stream.write(text);
    if (stream.writableLength > MAX_BUFFERED_BYTES) {
      closedByServer = true;
      abort.abort();
    }
  };
  const heartbeat = setInterval(() => write(": heartbeat\n\n"), HEARTBEAT_MS);
  heartbeat.unref();
  reply.raw.once("close", () => abort.abort());
  write(`event: metadata\ndata: ${JSON.stringify({ run_id: record.id, attempt: Math.max(1, record.starts) })}\n\n`);

  const pump = async (): Promise<void> => {
    const rested = await followRun(
      feed,
      principal,
      record.id,
      start.startAfter,
      async (event) => {
        remember(event);
        const made = translator.feed(event);
        if (event.type === "run-end") made.unshift(...(await endEvents(options, translator, event, asked, true)));
        made.forEach((protocolEvent, index) => {
          const position = { seq: event.seq, index };
          if (after(position, start.resumeAfter)) write(formatted(position, protocolEvent));
        });
      },
      abort.signal,
    );
    if (rested === undefined && options.cancelOnDisconnect && !closedByServer) {
      try {
        await feed.tasks.cancel(principal, record.id);
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
      }
    }
  };
  void pump()
    .catch((error: unknown) => {
      options.log.warn({ err: error, runId: record.id }, "agent protocol stream failed");
      const troupeError = error instanceof TroupeError ? error : undefined;
      write(`event: error\ndata: ${JSON.stringify({ error: troupeError?.code ?? "internal_error", message: troupeError?.message ?? "the stream failed; see the server's log" })}\n\n`);
    })
    .finally(() => {
      ended = true;
      clearInterval(heartbeat);
      stream.end();
    });
  return reply.header("content-type", "text/event-stream; charset=utf-8").header("cache-control", "no-cache, no-transform").header("x-accel-buffering", "no").send(stream);
}

/** A run's outcome as `runs.wait` and `runs.join` answer it: the thread's values, with `__interrupt__` while it waits and `__error__` when it failed. */
export async function runOutput(feed: RunFeed, threads: AgentThreads, principal: Principal, runId: string): Promise<Record<string, unknown>> {
  const record = await feed.tasks.record(principal, runId);
  const name = threadNameOfRun(record);
  const latest = await feed.tasks.troupe.store.runs.latestForThread(record.threadId);
  // The thread's state when the run is its latest (and has checkpoints); else what the run's record kept.
  const state = latest?.id === record.id ? await threads.state(principal, name) : undefined;
  const values: Record<string, unknown> =
    state && state.checkpoint.checkpoint_id !== null
      ? { ...state.values }
      : { messages: turnMessages([{ runId: record.id, task: record.task, answer: record.answer, status: record.status }]), run_id: record.id, task: record.task, answer: record.answer, status: record.status, stop_reason: record.stopReason };
  if (isWaiting(record)) {
    const pending = await feed.tasks.troupe.pendingInterrupts(record.threadId);
    values.__interrupt__ = pending.length > 0 ? pending.map((interrupt) => interruptOf(interrupt.id, interrupt)) : [interruptOf(record.id, record.interrupt)];
  }
  if (record.status === "failed") values.__error__ = { error: record.stopReason ?? "failed", message: record.error ?? `the run stopped: ${record.stopReason ?? "failed"}` };
  return values;
}

/**
 * Waits for a run to rest, then answers with its output. The answer's headers go at once and a
 * newline every 15 s while it runs, so a proxy does not close a long wait (JSON allows the
 * whitespace before the value); a client gone away leaves the run going unless it asked for a
 * cancel on disconnect.
 */
export async function sendRunOutput(reply: FastifyReply, options: { feed: RunFeed; threads: AgentThreads; principal: Principal; record: RunRecord; startAfter: number; cancelOnDisconnect: boolean; log: FastifyBaseLogger }): Promise<FastifyReply> {
  const { feed, principal, record } = options;
  const abort = new AbortController();
  reply.raw.once("close", () => abort.abort());
  const outcome = async (): Promise<Record<string, unknown> | undefined> => {
    const now = await feed.tasks.record(principal, record.id);
    if (!isResting(now, feed.tasks)) {
      const rested = await followRun(feed, principal, record.id, options.startAfter, () => {}, abort.signal);
      if (rested === undefined) {
        if (options.cancelOnDisconnect) await feed.tasks.cancel(principal, record.id).catch(() => undefined);
        return undefined;
      }
    }
    return runOutput(feed, options.threads, principal, record.id);
  };
  const body = new PassThrough();
  const heartbeat = setInterval(() => body.write("\n"), HEARTBEAT_MS);
  heartbeat.unref();
  void outcome()
    .then(
      (output) => {
        if (output !== undefined) body.write(JSON.stringify(output));
      },
      (error: unknown) => {
        options.log.warn({ err: error, runId: record.id }, "agent protocol wait failed");
        const troupeError = error instanceof TroupeError ? error : undefined;
        body.write(JSON.stringify({ __error__: { error: troupeError?.code ?? "internal_error", message: troupeError?.message ?? "the wait failed; see the server's log" } }));
      },
    )
    .finally(() => {
      clearInterval(heartbeat);
      body.end();
    });
  return reply.header("content-type", "application/json; charset=utf-8").send(body);
}
