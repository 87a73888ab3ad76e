import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { tempDir } from "../helpers.js";

// Issue 34: offline, `troupe resume demo --reject --feedback "only the arithmetic, please"` planned
// the identical plan again: the offline planner never read the person's feedback.
describe("the offline planner honours a person's feedback on a rejected plan", () => {
  it("re-plans the README's approval tour with only the arithmetic, then runs it", async () => {
    const directory = tempDir();
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    try {
      const first = await troupe.run({ task: "list the files and compute 2^10", approvePlan: true, threadId: "demo" });
      expect(first.status).toBe("interrupted");
      expect(first.plan.map((subtask) => subtask.label)).toEqual(["List the files", "Compute 2^10"]);
      const second = await troupe.resume("demo", { decision: "reject", feedback: "only the arithmetic, please" });
      expect(second.status).toBe("interrupted");
      expect(second.plan.map((subtask) => [subtask.label, subtask.tool])).toEqual([["Compute 2^10", "calculator"]]);
      // A second rejection's feedback adds to the first's.
      const third = await troupe.resume("demo", { decision: "reject", feedback: "also save it to power.txt" });
      expect(third.plan.map((subtask) => subtask.label)).toEqual(["Compute 2^10", "Save it to power.txt"]);
      const done = await troupe.resume("demo", { decision: "approve" });
      expect(done.status, done.error).toBe("completed");
      expect(done.answer).toContain("2^10 = 1024");
      expect(done.answer).not.toMatch(/list/i);
    } finally {
      troupe.close();
    }
  });
});
