import type { RunEvent, StoredEvent } from "../../core/events.js";


/** An event of any stream (a run's, an eval's) as stored: numbered per stream, with a timestamp. */
export type Sequenced<Event> = Event & { seq: number; at: number };

/**
 * The events of each run (and of each eval, under its id), numbered from 1, so readers can
 * resume after the last one they saw. Appends of one turn of the event loop are written in one
 * transaction; a read first writes what is pending. Implemented on SQLite and on Postgres (where
 * the database numbers them, so any process may append, and other processes hear of new events).
 */
export interface EventStore {
  /** Appends a run's event; resolves with its number (on SQLite at once, the write following on the next turn). */
  append(runId: string, event: RunEvent): Promise<StoredEvent>;
  /** Appends an event of any kind to a stream (a run's id, an eval's id). */
  appendTo<Event extends { type: string }>(streamId: string, event: Event): Promise<Sequenced<Event>>;
  /** Writes the events not yet written. */
  flush(): Promise<void>;
  /** The events of a run after `afterSeq` (all of them by default). */
  list(runId: string, afterSeq?: number, limit?: number): Promise<StoredEvent[]>;
  /** The events of a stream after `afterSeq`, read back as the kind its writer appended. */
  listOf<Event>(streamId: string, afterSeq?: number, limit?: number): Promise<Array<Sequenced<Event>>>;
  /**
   * The events of several runs, each after its own seq, at most `limit` of each, in one read
   * (Postgres: what a notification of other processes' events brings, for every run watched at
   * once); a run with none is missing from the answer.
   */
  listMany?(after: ReadonlyMap<string, number>, limit: number): Promise<Map<string, StoredEvent[]>>;
  /**
   * Calls `listener` with a stream's id whenever events of that stream were committed by any
   * process (Postgres: LISTEN/NOTIFY); undefined where only this process writes (SQLite).
   */
  follow?(listener: (streamId: string) => void): () => void;
}
