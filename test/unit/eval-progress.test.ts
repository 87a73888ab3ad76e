import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EvalEvent } from "../../src/eval/events.js";
import { runEval } from "../../src/eval/runner.js";
import { parseSuite } from "../../src/eval/suite.js";
import { Troupe } from "../../src/runtime/engine.js";

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe("an eval's progress", () => {
  it("counts each case once as it ends, even when cases end while the tally is being saved", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-eval-progress-"));
    directories.push(directory);
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    try {
      // The first case's tally is saved only once the second case has ended too: both end "at once".
      const evals = troupe.store.evals;
      const save = evals.update.bind(evals);
      let releaseFirst: () => void = () => undefined;
      const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
      let tallies = 0;
      evals.update = async (id, patch, options) => {
        if (patch.passed === undefined || patch.status !== undefined) return save(id, patch, options);
        tallies += 1;
        if (tallies === 1) await firstHeld;
        else releaseFirst();
        return save(id, patch, options);
      };
      const events: EvalEvent[] = [];
      const suite = parseSuite(['{"id":"one","task":"compute 1+1"}', '{"id":"two","task":"compute 2+2"}'].join("\n"), "two.jsonl");
      const results = await runEval({ troupe, suite, concurrency: 2, onEvent: (event) => events.push(event) });
      expect(results.passed).toBe(2);
      const ends = events.flatMap((event) => (event.type === "case-end" ? [`[${event.done}/${event.total}] ${event.passing} passing`] : []));
      expect(ends).toEqual(["[1/2] 1 passing", "[2/2] 2 passing"]);
    } finally {
      await troupe.shutdown();
    }
  });
});
