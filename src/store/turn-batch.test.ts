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

  it("writes one batch at a time when serial, so rows commit in the order they were added, however long a write takes", async () => {
    const committed: number[] = [];
    const write = (serial: boolean): TurnBatch<number> =>
      new TurnBatch<number>(
        async (rows) => {
          // The first batch is slow to commit: a batch written beside it would commit first.
          await new Promise((resolve) => setTimeout(resolve, rows.includes(1) ? 50 : 1));
          committed.push(...rows);
        },
        { serial },
      );
    const side = write(false);
    const first = side.add(1);
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([first, side.add(2), side.add(3)]);
    expect(committed).toEqual([2, 3, 1]);
    committed.length = 0;
    const serial = write(true);
    const added = [serial.add(1)];
    await new Promise((resolve) => setImmediate(resolve));
    added.push(serial.add(2));
    await new Promise((resolve) => setImmediate(resolve));
    added.push(serial.add(3));
    await serial.flush();
    expect(committed).toEqual([1, 2, 3]);
    await Promise.all(added);
  });
});
