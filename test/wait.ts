import { setTimeout as sleep } from "node:timers/promises";

/**
 * The one safety deadline of every wait in the tests: five minutes, or `TROUPE_TEST_PATIENCE_MS`.
 * It is a net against a hang, never the thing a test proves: a test waits on a state (an event, a
 * row, a file, a status), and a busy machine only makes it wait longer. vitest's test and hook
 * timeouts (vitest.config.ts) are above it, so a wait that gives up says what it waited for.
 */
export const PATIENCE_MS = patience(process.env.TROUPE_TEST_PATIENCE_MS);

/**
 * A test's own timeout: two patiences and a minute, so a test with a slow start and a slow end
 * still passes on a busy machine, and a wait that hangs fails first, with its message.
 */
export const TEST_TIMEOUT_MS = 2 * PATIENCE_MS + 60_000;

function patience(value: string | undefined): number {
  if (value === undefined || value === "") return 300_000;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) throw new Error(`TROUPE_TEST_PATIENCE_MS must be a positive whole number of milliseconds, not ${value}`);
  return parsed;
}

/**
 * Polls `check` every `intervalMs` until it returns a value (not undefined), and returns it. Fails
 * when `check` throws (say, the process it watches has exited), or after {@link PATIENCE_MS},
 * naming `what` (a function is asked only then, so it can say what it saw).
 */
export async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, what: string | (() => string), intervalMs = 20): Promise<T> {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${PATIENCE_MS} ms waiting for ${typeof what === "string" ? what : what()}`);
    await sleep(intervalMs);
  }
}
