import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { PlannedSubtask } from "../../core/plan.js";
import { MemoryStash } from "../../core/stash.js";
import { type ItemOutcome, type MapRunInput, runMap, subtaskFingerprint } from "./map-run.js";

const subtask: PlannedSubtask = { id: "s2", label: "Fetch each user's items", agent: "research", tool: "fetch_items", dependsOn: ["s1"], args: { user: { ref: "s1", path: "$.users[*]" } }, mapOver: "user" };
const key = { runId: "run-1", subtaskId: "s2" };

function input(stash: MemoryStash, overrides: Partial<MapRunInput> = {}): MapRunInput {
  return {
    stash,
    key,
    subtask,
    items: ["u1", "u2", "u3"],
    round: 0,
    retryFailedOnly: false,
    concurrency: 10,
    runItem: async (item) => ({ ok: true, output: `items of ${String(item)}` }),
    ...overrides,
  };
}

describe("runMap", () => {
  it("runs every item at most `concurrency` at a time and reports them in the list's order", async () => {
    let running = 0;
    let peak = 0;
    const items = Array.from({ length: 25 }, (_, index) => index);
    const { report, tally, ran } = await runMap(
      input(new MemoryStash(), {
        items,
        concurrency: 4,
        runItem: async (item) => {
          running += 1;
          peak = Math.max(peak, running);
          // Later items finish first, so completion order differs from list order.
          await sleep(30 - (item as number));
          running -= 1;
          return { ok: true, output: (item as number) * 2 };
        },
      }),
    );
    expect(peak).toBe(4);
    expect(ran).toBe(25);
    expect(report.overallStatus).toBe("ALL_SUCCESS");
    expect(report.results.map((result) => result.output)).toEqual(items.map((item) => item * 2));
    expect(tally).toEqual({ overallStatus: "ALL_SUCCESS", total: 25, succeeded: 25, failed: 0, failures: [] });
  });

  it("isolates items: one that throws or fails is that item's error, and the others succeed", async () => {
    const { report, tally } = await runMap(
      input(new MemoryStash(), {
        runItem: async (item): Promise<ItemOutcome> => {
          if (item === "u2") throw new Error("connection reset");
          return { ok: true, output: { user: item } };
        },
      }),
    );
    expect(report).toEqual({
      overallStatus: "PARTIAL_SUCCESS",
      results: [
        { status: "success", input: "u1", output: { user: "u1" } },
        { status: "error", input: "u2", error: "connection reset" },
        { status: "success", input: "u3", output: { user: "u3" } },
      ],
    });
    expect(tally.failures).toEqual([{ index: 1, input: "u2", error: "connection reset" }]);
    const all = await runMap(input(new MemoryStash(), { runItem: async () => ({ ok: false, error: "down" }) }));
    expect(all.report.overallStatus).toBe("ALL_FAILURE");
    expect((await runMap(input(new MemoryStash(), { items: [] }))).report).toEqual({ overallStatus: "ALL_SUCCESS", results: [] });
  });

  it("retries only the failed items in a later round and merges them into the same report", async () => {
    const stash = new MemoryStash();
    const calls: unknown[] = [];
    const flaky = (failing: Set<unknown>) => async (item: unknown): Promise<ItemOutcome> => {
      calls.push(item);
      return failing.has(item) ? { ok: false, error: `no answer for ${String(item)}` } : { ok: true, output: `items of ${String(item)}` };
    };
    const first = await runMap(input(stash, { runItem: flaky(new Set(["u2"])) }));
    expect(first.tally).toMatchObject({ succeeded: 2, failed: 1 });
    const retry = await runMap(input(stash, { round: 1, retryFailedOnly: true, runItem: flaky(new Set()) }));
    expect(calls).toEqual(["u1", "u2", "u3", "u2"]);
    expect(retry).toMatchObject({ ran: 1, kept: 2 });
    expect(retry.report.overallStatus).toBe("ALL_SUCCESS");
    expect(retry.report.results.map((result) => result.output)).toEqual(["items of u1", "items of u2", "items of u3"]);
  });

  it("after a crash, runs only the items that had not finished in that round (failed ones included as finished)", async () => {
    const stash = new MemoryStash();
    const fingerprint = subtaskFingerprint(subtask);
    await stash.putItem(key, { index: 0, fingerprint, round: 0, status: "success", input: "u1", output: "kept", durationMs: 5 });
    await stash.putItem(key, { index: 1, fingerprint, round: 0, status: "error", input: "u2", error: "kept failure", durationMs: 5 });
    const calls: unknown[] = [];
    const { report, ran, kept } = await runMap(input(stash, { runItem: async (item) => (calls.push(item), { ok: true, output: "fresh" }) }));
    expect(calls).toEqual(["u3"]);
    expect({ ran, kept }).toEqual({ ran: 1, kept: 2 });
    expect(report.results).toEqual([
      { status: "success", input: "u1", output: "kept" },
      { status: "error", input: "u2", error: "kept failure" },
      { status: "success", input: "u3", output: "fresh" },
    ]);
  });

  it("does not reuse items of other work, of changed inputs, or of a redo that asks for everything again", async () => {
    const stash = new MemoryStash();
    await runMap(input(stash));
    const calls: unknown[] = [];
    const record = async (item: unknown): Promise<ItemOutcome> => (calls.push(item), { ok: true, output: "new" });
    await runMap(input(stash, { subtask: { ...subtask, label: "Something else" }, runItem: record }));
    expect(calls).toEqual(["u1", "u2", "u3"]);
    calls.length = 0;
    await runMap(input(stash, { subtask: { ...subtask, label: "Something else" }, items: ["u1", "u9", "u3"], runItem: record }));
    expect(calls).toEqual(["u9"]);
    calls.length = 0;
    await runMap(input(stash, { subtask: { ...subtask, label: "Something else" }, items: ["u1", "u9", "u3"], round: 1, retryFailedOnly: false, runItem: record }));
    expect(calls).toEqual(["u1", "u9", "u3"]);
  });

  it("stops on abort without recording the unfinished items", async () => {
    const stash = new MemoryStash();
    const controller = new AbortController();
    const run = runMap(
      input(stash, {
        items: Array.from({ length: 10 }, (_, index) => index),
        concurrency: 2,
        signal: controller.signal,
        runItem: async (item) => {
          if (item === 3) controller.abort(new Error("cancelled"));
          await sleep(5);
          return { ok: true, output: item };
        },
      }),
    );
    await expect(run).rejects.toThrow();
    const kept = await stash.items(key);
    expect(kept.length).toBeLessThan(10);
    expect(kept.every((item) => item.status === "success")).toBe(true);
  });
});
