import { describe, expect, it } from "vitest";
import { CONTINUE_JSON_NUDGE, CONTINUE_NUDGE, joinContinuation } from "../../src/agents/continuation.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { ScriptedChatModel, type ScriptStep } from "../../src/testing/scripted-chat-model.js";
import { runScripted } from "../helpers.js";
import { envFor, fakeOpenAI, runOnProvider } from "../provider-helpers.js";

// "Continue where you stopped": an answer cut off at the output limit where no larger limit can
// be asked for (the scripted model, like Ollama and the offline model, has none) or where even
// the larger one cut it off, is sent back with a request to write only what comes next.

const WORK: ScriptStep[] = [planStep([subtask("s1", "research", "Describe the harbour")]), finalStep("s1", "a long description of the harbour"), reviewStep(0.9)];

type WireMessage = { role: string; content: unknown };

describe("an answer cut off at the output limit is continued where it stopped", () => {
  it("synthesizer, on a model with no larger limit: two cut-off pieces and the end, joined; each follow-up carries what was written so far", async () => {
    const { result, model } = await runScripted(
      [
        ...WORK,
        answerStep("The harbour holds forty boats, ", { cutOff: true }),
        answerStep("most of them trawlers, and its lighthouse ", { cutOff: true, contains: CONTINUE_NUDGE }),
        answerStep("was built in 1872.", { contains: CONTINUE_NUDGE }),
      ],
      // The synthesizer's answer is the subject: the whole pipeline, or the one worker's result would be the answer.
      { review: "always" },
    );
    model.assertDone();
    expect(result.status, result.error).toBe("completed");
    expect(result.answer).toBe("The harbour holds forty boats, most of them trawlers, and its lighthouse was built in 1872.");
    expect(result.trace.modelIncidents?.map((incident) => incident.reason)).toEqual([
      expect.stringMatching(/^the answer was cut off at the output limit after 31 characters; asked to continue where it stopped \(round 1 of 3\)$/),
      expect.stringMatching(/after 73 characters; asked to continue where it stopped \(round 2 of 3\)$/),
    ]);
    // The answer and two follow-ups (the OpenAI test below shows what a follow-up sends).
    expect(model.callsFor("synthesizer")).toHaveLength(3);
  });

  it("is bounded: an answer still cut off after three follow-ups fails the run, saying so, never a short answer", async () => {
    // The synthesizer's answer is the subject: the whole pipeline, or the one worker's result would be the answer.
    const { result, model } = await runScripted([...WORK, answerStep("It goes on and on ", { cutOff: true, times: 4 })], { review: "always" });
    model.assertDone();
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/answer was cut off at its output limit, even after 3 requests to continue it/);
    expect(model.callsFor("synthesizer")).toHaveLength(4);
  });

  it("a typed answer (output schema) cut off in its JSON: the JSON text is continued and read whole", async () => {
    const schema = { type: "object", properties: { city: { type: "string" }, boats: { type: "number" } }, required: ["city", "boats"], additionalProperties: false };
    const { result, model } = await runScripted([
      ...WORK,
      { role: "synthesizer", content: '{"city": "Port Wen', cutOff: true },
      { role: "synthesizer", content: 'ford", "boats": 40}', contains: CONTINUE_JSON_NUDGE },
    ], { outputSchema: schema });
    model.assertDone();
    expect(result.status, result.error).toBe("completed");
    expect(result.output).toEqual({ city: "Port Wenford", boats: 40 });
  });

  it("over the OpenAI wire (finish_reason length, streamed): cut off even with a larger limit, continued, the restated overlap dropped", async () => {
    const full = "The harbour holds forty boats, most of them trawlers, and its lighthouse was built in 1872 by the town's fishermen.";
    const half = full.slice(0, Math.floor(full.length / 2));
    const brain = new ScriptedChatModel({
      steps: [
        ...WORK,
        // Cut in half by the fake server (the "truncated" misbehaviour), twice: at the first limit and at the larger one.
        answerStep(full, { times: 2 }),
        // The continuation repeats the last words it wrote before going on.
        answerStep(full.slice(half.length - 16), { contains: CONTINUE_NUDGE }),
      ],
    });
    const openai = await fakeOpenAI(brain);
    openai.inject({ kind: "misbehave", as: "truncated" }, { role: "synthesizer", times: 2 });
    // The synthesizer's answer is the subject: the whole pipeline, or the one worker's result would be the answer.
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: "describe the harbour", review: "always" });
    brain.assertDone();
    expect(result.status, result.error).toBe("completed");
    expect(result.answer).toBe(full);
    const synthesizer = openai.requestsFor("synthesizer");
    expect(synthesizer.map((request) => request.fault ?? "ok")).toEqual(["misbehave", "misbehave", "ok"]);
    // The second asked for more room; the third sent the partial answer back as the model's turn, then the request.
    expect(synthesizer[1]?.maxTokens).toBeGreaterThan(synthesizer[0]?.maxTokens ?? 0);
    const sent = synthesizer[2]?.body.messages as WireMessage[];
    expect(sent.at(-2)).toEqual({ role: "assistant", content: half });
    expect(sent.at(-1)).toEqual({ role: "user", content: CONTINUE_NUDGE });
  });

  it("joins a continuation, dropping a restated overlap only when it is long enough to be one", () => {
    expect(joinContinuation("The lighthouse was built in", " 1872.")).toBe("The lighthouse was built in 1872.");
    expect(joinContinuation("The lighthouse was built in", "lighthouse was built in 1872.")).toBe("The lighthouse was built in 1872.");
    expect(joinContinuation("a b c", "c d")).toBe("a b cc d");
  });
});
