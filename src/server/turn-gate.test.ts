import { describe, expect, it } from "vitest";
import { TurnGate } from "./turn-gate.js";

/** What ran, in order: a run step let through the gate, and work queued behind it in the same turn (a submissions' group commit). */
async function stepAndCommit(gate: TurnGate): Promise<string[]> {
  const order: string[] = [];
  const passed = gate.pass().then(() => order.push("step"));
  // Queued after the gate's turn, as the creations' commit is queued by a request read in the poll phase.
  const committed = new Promise<void>((resolve) =>
    setImmediate(() => {
      order.push("commit");
      resolve();
    }),
  );
  await Promise.all([passed, committed]);
  return order;
}

describe("TurnGate", () => {
  it("lets one step start per turn, in arrival order", async () => {
    const gate = new TurnGate();
    const order: number[] = [];
    await Promise.all([1, 2, 3].map((step) => gate.pass().then(() => order.push(step))));
    expect(order).toEqual([1, 2, 3]);
    expect(await stepAndCommit(gate)).toEqual(["step", "commit"]);
  });

  it("lets submissions waiting for their commit go first when yieldTo says they wait", async () => {
    let waiting = true;
    const gate = new TurnGate({ yieldTo: () => waiting });
    expect(await stepAndCommit(gate)).toEqual(["commit", "step"]);
    waiting = false;
    expect(await stepAndCommit(gate)).toEqual(["step", "commit"]);
  });

  it("never holds a step back two turns in a row, however long yieldTo says requests wait", async () => {
    let asked = 0;
    const gate = new TurnGate({
      yieldTo: () => {
        asked += 1;
        return true;
      },
    });
    let turns = 0;
    let ticking = true;
    const tick = (): void => {
      turns += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    for (let step = 0; step < 5; step += 1) {
      const before = turns;
      await gate.pass();
      expect(turns - before).toBeLessThanOrEqual(2);
    }
    ticking = false;
    // Asked once a step (the turn after a yield passes without asking).
    expect(asked).toBe(5);
  });
});
