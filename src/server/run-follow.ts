import { setTimeout as sleep } from "node:timers/promises";
import type { StoredEvent } from "../core/events.js";
import type { RunRecord } from "../store/index.js";
import type { Principal } from "./config.js";
import type { EventHub } from "./event-hub.js";
import type { TaskService } from "./task-service.js";

/** What a protocol front (MCP, A2A) follows runs with: the task service and this server's live events. */
export interface RunFeed {
  tasks: TaskService;
  hub: EventHub;
}

const PAGE = 1_000;
/** How often the record is read while no event arrives: a run driven in another process, or an event missed. */
const POLL_MS = 1_000;

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/**
 * Whether a run rests: finished, waiting for a person, or stopped by a shutdown — nothing drives it
 * until someone answers or a server takes it up again.
 */
export function isResting(record: RunRecord, tasks: TaskService): boolean {
  if (TERMINAL.has(record.status)) return true;
  return record.status === "interrupted" && !tasks.isActive(record.id);
}

/** The number of the last event a run has stored (0 when none): a follower starts after it. */
export async function lastEventSeq(feed: RunFeed, runId: string): Promise<number> {
  let last = 0;
  for (;;) {
    const page = await feed.tasks.troupe.store.events.list(runId, last, PAGE * 10);
    if (page.length === 0) return last;
    last = (page.at(-1) as StoredEvent).seq;
    if (page.length < PAGE * 10) return last;
  }
}

/**
 * Follows a run: its stored events after `after`, then the live ones, each handed to `onEvent`
 * once and in order, until a `run-end` arrives (the run finished, waits for a person, or was
 * suspended) — then resolves with its record. Resolves early with `undefined` when `signal`
 * aborts: the run goes on without the follower. Events of a run driven by another process
 * (Postgres) arrive through the store's notifications, and the record is read every second
 * besides, so a follower never waits on an event that went missing.
 */
export async function followRun(
  feed: RunFeed,
  principal: Principal,
  runId: string,
  after: number,
  onEvent: (event: StoredEvent) => void | Promise<void>,
  signal?: AbortSignal,
): Promise<RunRecord | undefined> {
  const { tasks, hub } = feed;
  const store = tasks.troupe.store;
  let lastSeq = after;
  let ended = false;
  let wake: (() => void) | undefined;
  const pending: StoredEvent[] = [];
  const nudge = (): void => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const unsubscribe = hub.subscribe(runId, (event) => {
    pending.push(event);
    nudge();
  });
  let stale = true;
  const unfollow = store.events.follow?.((stream) => {
    if (stream === runId || stream === "") {
      stale = true;
      nudge();
    }
  });
  const onAbort = (): void => nudge();
  signal?.addEventListener("abort", onAbort, { once: true });
  const deliver = async (event: StoredEvent): Promise<void> => {
    if (event.seq <= lastSeq || ended) return;
    lastSeq = event.seq;
    await onEvent(event);
    if (event.type === "run-end") ended = true;
  };
  try {
    for (let first = true; ; first = false) {
      if (signal?.aborted) return undefined;
      if (stale) {
        // The store first (what came before, or what another process stored), then what arrived live meanwhile.
        stale = false;
        for (let page = await store.events.list(runId, lastSeq, PAGE); page.length > 0 && !ended; page = page.length < PAGE ? [] : await store.events.list(runId, lastSeq, PAGE)) {
          for (const event of page) await deliver(event);
        }
      }
      for (const event of pending.splice(0).sort((a, b) => a.seq - b.seq)) {
        // A gap: an event between the last delivered and this one is only in the store.
        if (event.seq > lastSeq + 1 && !ended) {
          for (const stored of await store.events.list(runId, lastSeq, event.seq - lastSeq - 1)) await deliver(stored);
        }
        await deliver(event);
      }
      if (ended) {
        await tasks.driveSettled(runId, lastSeq);
        return await tasks.record(principal, runId);
      }
      if (first) {
        // Resting already, with nothing after `after` (a finished run, one waiting for a person): nothing to wait for.
        const record = await tasks.record(principal, runId);
        if (isResting(record, tasks) && pending.length === 0) return record;
      }
      const waited = new Promise<void>((resolve) => (wake = resolve));
      const timedOut = await Promise.race([waited.then(() => false), sleep(POLL_MS, true, { ref: false })]);
      if (timedOut) {
        wake = undefined;
        const record = await tasks.record(principal, runId);
        // Resting with no run-end seen after `after`: read the store once more, then it is settled.
        if (isResting(record, tasks)) {
          stale = true;
          for (let page = await store.events.list(runId, lastSeq, PAGE); page.length > 0 && !ended; page = page.length < PAGE ? [] : await store.events.list(runId, lastSeq, PAGE)) {
            for (const event of page) await deliver(event);
          }
          return ended ? await tasks.record(principal, runId) : record;
        }
        stale = true;
      }
    }
  } finally {
    unsubscribe();
    unfollow?.();
    signal?.removeEventListener("abort", onAbort);
  }
}
