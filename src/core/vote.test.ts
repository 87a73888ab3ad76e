import { describe, expect, it } from "vitest";
import { describeDecision, parseDecideRequest, tallyVotes, type VoteRecord, voteSchema } from "./vote.js";
import { isStrictCompatible, wireJsonSchema } from "./wire-schema.js";

const vote = (voter: string, choice: string | null, weight = 1): VoteRecord => ({ voter, choice, confidence: 0.8, reason: "because", weight, ...(choice === null ? { abstained: true } : {}) });

describe("tallying votes", () => {
  it("decides when the winning share reaches the threshold (the seed's 3 of 4 = 0.75 against 0.6)", () => {
    const result = tallyVotes("agree?", ["agree", "disagree", "neutral"], [vote("a1", "agree"), vote("a2", "agree"), vote("a3", "agree"), vote("a4", "disagree")]);
    expect(result).toMatchObject({ decision: "agree", consensus: 0.75, reached: true, outcome: "decided", counts: { agree: 3, disagree: 1, neutral: 0 }, threshold: 0.6 });
    expect(describeDecision(result)).toBe('decided "agree" (consensus 0.75 ≥ 0.6)');
  });

  it("reports a tie and a share below the threshold, with what led", () => {
    const tie = tallyVotes("?", ["a", "b"], [vote("1", "a"), vote("2", "b")]);
    expect(tie).toMatchObject({ decision: null, reached: false, outcome: "tie", leading: ["a", "b"], consensus: 0.5 });
    const low = tallyVotes("?", ["a", "b", "c"], [vote("1", "a"), vote("2", "b"), vote("3", "c"), vote("4", "a")], 0.6);
    expect(low).toMatchObject({ decision: null, reached: false, outcome: "no_consensus", leading: ["a"], consensus: 0.5 });
    expect(describeDecision(low)).toBe('no consensus: "a" leads with 0.5, below the threshold 0.6');
  });

  it("weighs votes, and counts abstentions in the total so they never raise another option's share", () => {
    const weighted = tallyVotes("?", ["a", "b"], [vote("1", "a"), vote("2", "a"), vote("3", "b", 3)]);
    expect(weighted).toMatchObject({ decision: "b", consensus: 0.6, counts: { a: 2, b: 1 }, weighted: { a: 2, b: 3 } });
    const abstained = tallyVotes("?", ["a", "b"], [vote("1", "a"), vote("2", null), vote("3", null)]);
    expect(abstained).toMatchObject({ decision: null, outcome: "no_consensus", consensus: 0.333 });
    expect(tallyVotes("?", ["a", "b"], [vote("1", null)])).toMatchObject({ outcome: "no_votes", decision: null, consensus: 0, leading: [] });
    expect(tallyVotes("?", ["a", "b"], [])).toMatchObject({ outcome: "no_votes" });
  });

  it("does not overflow with huge weights (1e308 made no_consensus on main), and refuses a weight past 100", () => {
    expect(tallyVotes("?", ["a", "b"], [vote("1", "a", 1e308), vote("2", "a", 1e308), vote("3", "b", 1)])).toMatchObject({ decision: "a", outcome: "decided", consensus: 1 });
    expect(() => parseDecideRequest({ question: "go?", options: ["a", "b"], weights: [1e308, 1] })).toThrow("a weight is at most 100");
  });

  it("sends a strict-compatible vote schema whose choice is an enum of the options", () => {
    const schema = voteSchema(["ship", "wait"]);
    expect(voteSchema(["ship", "wait"])).toBe(schema);
    const json = wireJsonSchema(schema) as { properties: { choice: { enum: string[] } } };
    expect(json.properties.choice.enum).toEqual(["ship", "wait"]);
    expect(isStrictCompatible(wireJsonSchema(schema))).toBe(true);
    expect(schema.safeParse({ choice: "later", confidence: 0.5, reason: "x" }).success).toBe(false);
    expect(schema.safeParse({ choice: "wait", confidence: 1.5, reason: "x" }).success).toBe(false);
  });

  it("checks a decision request: at least two different options, voters and weights in range", () => {
    expect(parseDecideRequest({ question: " go? ", options: ["yes", "no"] })).toEqual({ question: "go?", options: ["yes", "no"] });
    expect(() => parseDecideRequest({ question: "go?", options: ["yes"] })).toThrow("options: give at least two options");
    expect(() => parseDecideRequest({ question: "go?", options: ["yes", "yes"] })).toThrow("options: the options must differ");
    expect(() => parseDecideRequest({ question: "go?", options: ["a", "b"], voters: 99 })).toThrow("voters must be between 1 and 15");
    expect(() => parseDecideRequest({ question: "go?", options: ["a", "b"], threshold: 0 })).toThrow("the threshold must be more than 0 and at most 1");
    expect(() => parseDecideRequest({ question: "go?", options: ["a", "b"], weights: [-1] })).toThrow("a weight cannot be negative");
  });
});
