import { describe, expect, it } from "vitest";
import { TurnBatch } from "./turn-batch.js";

describe("a batch per turn of the event loop", () => {
  it("writes the rows of one turn in one call, resolving each writer after it", async () => {
    const writes: number[][] = [];
    const batch = new TurnBatch<number>((rows) => void writes.push(rows));
    const first = [batch.add(1), batch.add(2), batch.add(3)];
    expect(writes).toEqual([]);
    await Promise.all(first);
    await batch.add(4);
    expect(writes).toEqual([[1, 2, 3], [4]]);
  });

  it("writes at once on flush (before a read), and rejects every writer of a batch that fails", async () => {
    const writes: string[][] = [];
    const batch = new TurnBatch<string>((rows) => {
      if (rows.includes("bad")) throw new Error("refused");
      writes.push(rows);
    });
    const kept = batch.add("a");
    batch.flush();
    expect(writes).toEqual([["a"]]);
    await kept;
    const failed = [batch.add("b"), batch.add("bad")];
    batch.flush();
    for (const outcome of await Promise.allSettled(failed)) expect(outcome).toMatchObject({ status: "rejected", reason: new Error("refused") });
    expect(writes).toEqual([["a"]]);
  });
});
