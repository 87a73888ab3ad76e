import { mkdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TroupeConfig } from "../src/config/config-file.js";
import { parseEnv } from "../src/config/env.js";
import type { StoredEvent } from "../src/core/events.js";
import { STRUCTURED_OUTPUT } from "../src/core/prompt-protocol.js";
import type { DecisionResult } from "../src/core/vote.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { envFor, fakeOpenAI } from "./provider-helpers.js";
import { eventsOf, runCli, tempDir } from "./helpers.js";

/** A voter's scripted vote: voter `index` (from 1) of `of` chooses `choice`. */
function voteStep(index: number, of: number, choice: string, confidence = 0.8, reason = `voter ${index} prefers ${choice}`): ScriptStep {
  return { role: "voter", contains: `You are voter ${index} of ${of};`, toolCalls: [{ name: STRUCTURED_OUTPUT.vote, args: { choice, confidence, reason } }] };
}

/** An engine on a scripted model, with a config of its own. */
async function scriptedEngine(steps: ScriptStep[], config: TroupeConfig = {}) {
  const directory = tempDir();
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace, { recursive: true });
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ models: modelSetOf(model), config, dataDir: path.join(directory, "data"), workspace });
  return { troupe, model, workspace };
}

describe("troupe decide: votes against a consensus threshold", () => {
  it("decides by the share of the winning option, each vote structured through the scripted model", async () => {
    const { troupe, model } = await scriptedEngine([voteStep(1, 3, "yes", 0.9), voteStep(2, 3, "yes", 0.7), voteStep(3, 3, "no", 0.6, "the tests are red")]);
    try {
      const result = await troupe.decide({ question: "Ship the release on Friday?", options: ["yes", "no"], voters: 3 });
      model.assertDone();
      expect(result).toMatchObject({ decision: "yes", outcome: "decided", reached: true, threshold: 0.6, counts: { yes: 2, no: 1 } });
      expect(result.consensus).toBeCloseTo(0.667, 3);
      expect(result.votes).toEqual([
        { voter: "voter-1", model: "scripted:script", choice: "yes", confidence: 0.9, reason: "voter 1 prefers yes", weight: 1 },
        { voter: "voter-2", model: "scripted:script", choice: "yes", confidence: 0.7, reason: "voter 2 prefers yes", weight: 1 },
        { voter: "voter-3", model: "scripted:script", choice: "no", confidence: 0.6, reason: "the tests are red", weight: 1 },
      ]);
      // Each voter was asked through the vote's schema, its choice an enum of the options.
      expect(model.calls.map((call) => call.tools)).toEqual([[STRUCTURED_OUTPUT.vote], [STRUCTURED_OUTPUT.vote], [STRUCTURED_OUTPUT.vote]]);
    } finally {
      troupe.close();
    }
  });

  it("reports a tie and a share below the threshold as no decision, never broken", async () => {
    const tie = await scriptedEngine([voteStep(1, 2, "postgres"), voteStep(2, 2, "sqlite")]);
    try {
      const result = await tie.troupe.decide({ question: "Which database?", options: ["postgres", "sqlite", "mysql"], voters: 2 });
      expect(result).toMatchObject({ decision: null, outcome: "tie", reached: false, consensus: 0.5, leading: ["postgres", "sqlite"], counts: { postgres: 1, sqlite: 1, mysql: 0 } });
    } finally {
      tie.troupe.close();
    }
    const split = await scriptedEngine([voteStep(1, 3, "a"), voteStep(2, 3, "a"), voteStep(3, 3, "b")]);
    try {
      const result = await split.troupe.decide({ question: "a or b?", options: ["a", "b"], voters: 3, threshold: 0.75 });
      expect(result).toMatchObject({ decision: null, outcome: "no_consensus", reached: false, leading: ["a"], threshold: 0.75 });
      expect(result.consensus).toBeCloseTo(0.667, 3);
    } finally {
      split.troupe.close();
    }
  });

  it("weighs the voters: the weighted share decides, by position or by name", async () => {
    const { troupe } = await scriptedEngine([voteStep(1, 3, "a"), voteStep(2, 3, "a"), voteStep(3, 3, "b"), voteStep(1, 3, "a"), voteStep(2, 3, "a"), voteStep(3, 3, "b")]);
    try {
      const weighted = await troupe.decide({ question: "a or b?", options: ["a", "b"], voters: 3, weights: [1, 1, 3] });
      expect(weighted).toMatchObject({ decision: "b", outcome: "decided", counts: { a: 2, b: 1 }, weighted: { a: 2, b: 3 }, consensus: 0.6 });
      const byName = await troupe.decide({ question: "a or b?", options: ["a", "b"], voters: 3, weights: { "voter-3": 2 } });
      expect(byName).toMatchObject({ decision: null, outcome: "tie", weighted: { a: 2, b: 2 } });
      await expect(troupe.decide({ question: "a or b?", options: ["a", "b"], voters: 3, weights: [1, 2] })).rejects.toThrow(/2 weights for 3 voters/);
    } finally {
      troupe.close();
    }
  });

  it("lets agents vote in their roles, and counts a voter that fails as abstaining", async () => {
    const { troupe, model } = await scriptedEngine([
      { ...voteStep(1, 2, "keep"), contains: "You vote as the research agent" },
      { role: "voter", contains: "You vote as the code agent", error: "the model is down" },
    ]);
    try {
      const result = await troupe.decide({ question: "Keep the old API?", options: ["keep", "drop"], voters: ["research", "code"] });
      model.assertDone();
      expect(result.votes.map((vote) => [vote.voter, vote.choice, vote.abstained ?? false])).toEqual([
        ["research", "keep", false],
        ["code", null, true],
      ]);
      expect(result.votes[1]?.reason).toMatch(/^the vote could not be cast: /);
      // The abstention counts in the total: one vote of two is half, below the threshold.
      expect(result).toMatchObject({ outcome: "no_consensus", consensus: 0.5, decision: null });
    } finally {
      troupe.close();
    }
  });

  it("structures each vote through the real OpenAI client: strict JSON schema, the choice an enum of the options", async () => {
    const brain = new ScriptedChatModel({ steps: [voteStep(1, 3, "approve", 0.9), voteStep(2, 3, "approve", 0.8), voteStep(3, 3, "reject", 0.4)] });
    const openai = await fakeOpenAI(brain);
    const directory = tempDir();
    const troupe = await Troupe.create({ env: parseEnv(envFor({ openai }, { TROUPE_PROVIDER: "openai:gpt-4.1-mini" })), config: {}, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    try {
      const result = await troupe.decide({ question: "Merge the pull request?", options: ["approve", "reject", "defer"] });
      expect(result).toMatchObject({ decision: "approve", outcome: "decided", counts: { approve: 2, reject: 1, defer: 0 } });
      expect(result.votes.every((vote) => vote.model === "openai:gpt-4.1-mini")).toBe(true);
      expect(result.usage.llmCalls).toBe(3);
      const requests = openai.requestsFor("voter");
      expect(requests).toHaveLength(3);
      const format = requests[0]?.body.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: { properties: Record<string, { enum?: string[] }>; required: string[] } } };
      expect(format.type).toBe("json_schema");
      expect(format.json_schema.name).toBe(STRUCTURED_OUTPUT.vote);
      expect(format.json_schema.strict).toBe(true);
      expect(format.json_schema.schema.properties.choice?.enum).toEqual(["approve", "reject", "defer"]);
      expect(format.json_schema.schema.required).toEqual(["choice", "confidence", "reason"]);
    } finally {
      troupe.close();
    }
  });

  it("abstains on the offline model, saying a vote needs a language model, through the CLI", async () => {
    const directory = tempDir();
    const cli = await runCli(["decide", "Is Rust better than Go?", "--options", "rust,go", "--voters", "2", "--json", "--data-dir", path.join(directory, "data")], { cwd: directory });
    expect(cli.code).toBe(1);
    const result = JSON.parse(cli.stdout) as DecisionResult;
    expect(result).toMatchObject({ decision: null, outcome: "no_votes", reached: false, consensus: 0, counts: { rust: 0, go: 0 } });
    expect(result.votes).toHaveLength(2);
    for (const vote of result.votes) expect(vote).toMatchObject({ choice: null, abstained: true, model: "offline:rules-v1", reason: expect.stringMatching(/cannot judge an open question; a vote needs a language model/) });
    const bad = await runCli(["decide", "Which?", "--options", "only"], { cwd: directory });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/options: give at least two options/);
  });
});

describe("the critic as a panel (--reviewers)", () => {
  const plan = planStep([subtask("s1", "execute", "Compute 6*7", { tools: ["calculator"] })]);
  const work = [toolStep("s1", "calculator", { expression: "6*7" }), finalStep("s1", "42", { contains: '"ok":true' })];
  const reviewer = (index: number, scores: number, fields: Record<string, unknown> = {}): ScriptStep => ({
    ...reviewStep(scores, fields),
    contains: `You are reviewer ${index} of 3 on a panel.`,
  });

  it("combines the reviewers' verdicts by vote: two passes of three pass the work, and the trace and events show the panel", async () => {
    const { troupe, model } = await scriptedEngine([plan, ...work, reviewer(1, 0.9), reviewer(2, 0.8), reviewer(3, 0.3, { issues: ["s1 looks wrong"], redo: ["s1"] }), answerStep("42")]);
    const events: StoredEvent[] = [];
    try {
      // The subject is the critic's verdict: the whole pipeline (critic and synthesizer), not the fast route.
      const result = await troupe.run({ task: "compute 6*7", reviewers: 3, review: "always" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("completed");
      const review = result.trace.reviews[0];
      expect(review).toMatchObject({ passed: true, panel: { outcome: "decided", decision: "pass", counts: { pass: 2, redo: 1, replan: 0 } } });
      expect(review?.panel?.votes.map((vote) => [vote.voter, vote.choice])).toEqual([
        ["reviewer-1", "pass"],
        ["reviewer-2", "pass"],
        ["reviewer-3", "redo"],
      ]);
      // The panel's scores are the reviewers' means.
      expect(review?.scores.accuracy).toBeCloseTo((0.9 + 0.8 + 0.3) / 3, 3);
      expect(eventsOf(events, "critic-verdict")[0]?.verdict.panel?.decision).toBe("pass");
      expect(model.callsFor("critic")).toHaveLength(3);
    } finally {
      troupe.close();
    }
  });

  it("does not pass work the panel is split on, and redoes what its reviewers named", async () => {
    const { troupe, model } = await scriptedEngine([
      plan,
      ...work,
      reviewer(1, 0.9),
      reviewer(2, 0.3, { issues: ["s1 should show its working"], redo: ["s1"] }),
      reviewer(3, 0.2, { issues: ["the plan misses the point"], replan: true }),
      ...work,
      reviewer(1, 0.9),
      reviewer(2, 0.9),
      reviewer(3, 0.9),
      answerStep("42"),
    ]);
    try {
      // The subject is the critic's verdict and the redo round: the whole pipeline, not the fast route.
      const result = await troupe.run({ task: "compute 6*7", reviewers: 3, review: "always" });
      model.assertDone();
      const [first, second] = result.trace.reviews;
      expect(first).toMatchObject({ passed: false, redo: ["s1"], replan: false, panel: { outcome: "tie", decision: null, leading: ["pass", "redo", "replan"] } });
      expect(first?.issues[0]).toMatch(/^the review panel did not agree \(tie between "pass" and "redo" and "replan"/);
      expect(second).toMatchObject({ passed: true, panel: { outcome: "decided", consensus: 1 } });
      expect(result.status).toBe("completed");
      expect(result.plan[0]).toMatchObject({ id: "s1", attempts: 2 });
    } finally {
      troupe.close();
    }
  });
});
