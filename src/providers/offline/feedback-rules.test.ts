import { describe, expect, it } from "vitest";
import { applyFeedback } from "./feedback-rules.js";
import { parseTask } from "./intents.js";

const kinds = (task: string, feedback: string[]) => {
  const reading = applyFeedback(parseTask(task), feedback);
  return { kept: reading.keep.map((intent) => intent.kind), additions: reading.additions, understood: reading.understood };
};

describe("a person's feedback on a rejected plan, read by rules", () => {
  it("keeps only the clauses of the kind of work it names, however it is put", () => {
    const task = "list the files in data and compute 2^10, then save it to out.txt";
    expect(kinds(task, ["only the arithmetic, please"]).kept).toEqual(["compute"]);
    expect(kinds(task, ["Just the calculation."]).kept).toEqual(["compute"]);
    expect(kinds(task, ["the listing only"]).kept).toEqual(["list"]);
    expect(kinds(task, ["only the maths and the saving"]).kept).toEqual(["compute", "write"]);
  });

  it("leaves out what it names by kind, by file or by number", () => {
    const task = "list the files in data and compute 2^10, then save it to out.txt";
    expect(kinds(task, ["without the listing"]).kept).toEqual(["compute", "write"]);
    expect(kinds(task, ["don't save anything"]).kept).toEqual(["list", "compute"]);
    expect(kinds(task, ["skip out.txt"]).kept).toEqual(["list", "compute"]);
    expect(kinds("compute 2^10 and compute 3^5", ["not 3^5"]).kept).toEqual(["compute"]);
    expect(kinds(task, ["only the arithmetic, not the file writing"]).kept).toEqual(["compute"]);
  });

  it("adds what it asks for besides, and says when it could read nothing", () => {
    expect(kinds("compute 2^10", ["also save it to out.txt"])).toEqual({ kept: ["compute"], additions: ["save it to out.txt"], understood: true });
    expect(kinds("compute 2^10", ["this looks wrong to me"])).toEqual({ kept: ["compute"], additions: [], understood: false });
  });
});
