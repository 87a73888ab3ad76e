import { setTimeout as sleep } from "node:timers/promises";

/**
 * What time it is and how to wait for a later one, for what runs on a calendar (schedules,
 * retention): the system's clock, or one a test moves by hand (testing/manual-clock.ts) so a
 * daily tick comes in milliseconds.
 */
export interface Clock {
  now(): number;
  /** Resolves once `ms` have passed on this clock; rejects when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleep(ms, undefined, signal ? { signal } : {}),
};
