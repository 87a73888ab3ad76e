import { describe, expect, it } from "vitest";
import { FairQueue, KeyedCounts } from "./fair-queue.js";

describe("a fair queue", () => {
  it("takes round-robin across keys, first in first out within one", () => {
    const queue = new FairQueue<string>();
    for (let index = 1; index <= 4; index += 1) queue.push("alice", `a${index}`);
    queue.push("bob", "b1");
    queue.push("carol", "c1");
    queue.push("bob", "b2");
    const order: string[] = [];
    for (let next = queue.take(); next; next = queue.take()) order.push(next.item);
    expect(order).toEqual(["a1", "b1", "c1", "a2", "b2", "a3", "a4"]);
    expect(queue.size).toBe(0);
  });

  it("skips a key held at its limit, giving its turn to the others, and lets a key's urgent item go first in its line", () => {
    const queue = new FairQueue<string>();
    const running = new KeyedCounts();
    for (const item of ["a1", "a2", "a3"]) queue.push("alice", item);
    queue.push("bob", "b1");
    const limited = () => queue.take((key) => running.count(key) < 1);
    const first = limited();
    running.start(first?.key ?? "");
    expect(first?.item).toBe("a1");
    expect(limited()?.item).toBe("b1");
    // alice is at her limit: nothing else may start until hers ends.
    expect(limited()).toBeUndefined();
    queue.push("alice", "a0", true);
    running.end("alice");
    expect(limited()?.item).toBe("a0");
    expect(queue.remove("a3")).toBe(true);
    expect(queue.includes("a2")).toBe(true);
    expect(queue.size).toBe(1);
  });
});
