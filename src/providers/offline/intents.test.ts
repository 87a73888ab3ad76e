import { afterEach, describe, expect, it, vi } from "vitest";
import { JsonScanner } from "../../core/json-scan.js";
import { splitClauses } from "./intents.js";

describe("the offline model's clause splitter on hostile text", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("keeps bracketed JSON whole, and reads a task of unclosed brackets about once (it read the rest of the task from every bracket)", () => {
    expect(splitClauses('save {"a": "x. then y", "b": [1, 2]} to a.json, then list the files')).toEqual(['save {"a": "x. then y", "b": [1, 2]} to a.json', "list the files"]);
    const reads = vi.spyOn(JsonScanner.prototype, "read");
    const task = `compute 1+1 and ${"[{".repeat(10_000)} then list the files`;
    expect(splitClauses(task).at(-1)).toBe("list the files");
    expect(reads.mock.calls.length).toBeLessThanOrEqual(2 * task.length);
  });
});
