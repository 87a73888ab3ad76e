/**
 * Thread names belong to their owner: two API keys may each have a thread `daily`, and neither
 * can read, continue, fork, delete or watch the other's. This is the one place that maps the
 * name an owner gives a thread to the id troupe keeps it under (its key) and back:
 *
 * - The unkeyed owner — the CLI and the library (no owner), and `local` (the API without keys)
 *   — keeps its names: the key is the name.
 * - An API key's thread is `<key name>/<thread name>`: alice's `daily` is `alice/daily`.
 *
 * A thread name is 1-128 letters, digits, '.', '_', ':' or '-' and a key's name 1-64 letters,
 * digits, '.', '_' or '-': neither holds a '/', so a key splits one way only and no name anyone
 * gives is another owner's key. The key is what everything below the API uses: the runs table's
 * `thread_id`, LangGraph's checkpoints (`configurable.thread_id`), the thread's lock, the run
 * queue's serialisation key (pg-boss's singleton key), the audit trail. The name is what the
 * owner sees: `thread_id` in REST, MCP and webhooks, A2A's `contextId`, the `run-start` event.
 * Rows written before (an API key's thread kept under its bare name) are moved by the migrations
 * SQLite 0020 / Postgres 0009.
 */

/** The owner of runs made by the API without keys (server/api-keys.ts: LOCAL_PRINCIPAL). */
export const LOCAL_OWNER = "local";

const SEPARATOR = "/";

/** Whether an owner keeps its thread names as they are (the CLI, the library, the API without keys). */
export function keepsThreadNames(owner: string | null | undefined): boolean {
  return owner === null || owner === undefined || owner === LOCAL_OWNER;
}

/** The id a thread is kept under: its owner's name for it, in its owner's namespace. */
export function threadKey(owner: string | null | undefined, name: string): string {
  return keepsThreadNames(owner) ? name : `${owner}${SEPARATOR}${name}`;
}

/** The name a thread's owner knows it by (the key itself when it is not in that owner's namespace). */
export function threadNameOf(owner: string | null | undefined, key: string): string {
  if (keepsThreadNames(owner)) return key;
  const prefix = `${owner}${SEPARATOR}`;
  return key.startsWith(prefix) ? key.slice(prefix.length) : key;
}

/** A run's thread as its owner names it. */
export function threadNameOfRun(run: { owner: string | null; threadId: string }): string {
  return threadNameOf(run.owner, run.threadId);
}
