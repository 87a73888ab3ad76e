import type { Overwrite } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { blankState, type State } from "../state.js";
import { intake } from "./intake.js";

describe("intake", () => {
  it("on a new thread writes only what the reset changes: each write is a checkpointer row", () => {
    const state = { ...blankState(), task: "Add the figures" } as State;
    const update = intake(state);
    expect(Object.keys(update).sort()).toEqual(["metrics", "nodes"]);
    expect((update.nodes as Overwrite<string[]>).value).toEqual(["intake"]);
  });

  it("after a run on the thread resets everything it left behind", () => {
    const state = {
      ...blankState(),
      task: "  Next question  ",
      plan: [{ id: "s1", label: "Look it up", agent: "research", task: "Look it up", dependsOn: [], args: {} }],
      planStatus: "approved",
      planAttempts: 2,
      answer: "42",
      answerStatus: "final",
      finished: true,
      results: { s1: { status: "done" } },
      reviews: [{ passed: true, issues: [] }],
      board: [{ from: "s1", text: "note" }],
    } as unknown as State;
    const update = intake(state);
    expect(update).toMatchObject({ task: "Next question", plan: [], planStatus: "none", planAttempts: 0, answer: null, answerStatus: "none", finished: false });
    expect((update.results as Overwrite<unknown>).value).toEqual({});
    expect((update.reviews as Overwrite<unknown[]>).value).toEqual([]);
    expect((update.board as Overwrite<unknown[]>).value).toEqual([]);
    // What was already at its reset value stays unwritten.
    expect(update).not.toHaveProperty("question");
    expect(update).not.toHaveProperty("toolCalls");
  });
});
