import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events.js";
import { Troupe } from "../../src/runtime/engine.js";

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe("an answer that is not streamed", () => {
  it("comes whole in its answer event, with its evidence once and no tokens (the CLI printed the evidence twice)", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-answer-stream-"));
    directories.push(directory);
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    try {
      await troupe.run({ task: "list the files and compute 2^10", approvePlan: true, threadId: "demo" });
      const events: StoredEvent[] = [];
      const result = await troupe.resume("demo", { decision: "approve" }, { onEvent: (event) => events.push(event) });
      expect(result.status).toBe("completed");
      expect(result.answerFormat).toBe("text");
      expect(result.answer?.split("**Evidence**")).toHaveLength(2);
      expect(result.answer).not.toContain("no source found");
      // The offline model does not stream: no token goes out, so nothing is shown before the answer.
      expect(events.filter((event) => event.type === "answer-token")).toEqual([]);
      expect(events.filter((event) => event.type === "answer").map((event) => (event as { text: string }).text)).toEqual([result.answer]);
    } finally {
      await troupe.shutdown();
    }
  });
});
