import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { envFor, fakeOpenAI, runOnProvider } from "../provider-helpers.js";

// The proactive path: a provider configured with a small `contextWindow` caps the worker's prompt
// budget at the window minus the answer's room and the tools' definitions, so each prompt is cut
// (less detail, then earlier results compacted to their handles) before it is sent. The fake
// server refuses any request over the same window, as providers do (context_length_exceeded). The window is
// set so the last prompt is the first that needs compacting (it moves with the offered tools' definitions).

const WINDOW = 3_500;
const LOREM = "lorem ipsum dolor sit amet ";

describe("a provider with a small context window", () => {
  it("every worker prompt that reaches it fits: detail is cut, then earlier results compacted, before sending; the run completes with no refusal", async () => {
    const brain = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "research", "Read f0.txt to f3.txt, check a snippet is JSON, and say what the files hold", { tools: ["file_read", "json"] })]),
        toolStep("s1", "file_read", { path: "f0.txt" }),
        // A call whose own arguments are long: the part of the prompt no detail level shortens.
        toolStep("s1", "json", { operation: "validate", text: JSON.stringify(LOREM.repeat(100)) }),
        toolStep("s1", "file_read", { path: "f1.txt" }),
        toolStep("s1", "file_read", { path: "f2.txt" }),
        toolStep("s1", "file_read", { path: "f3.txt" }),
        finalStep("s1", "four files of lorem ipsum"),
        reviewStep(0.9),
        // One subtask: its worker's result is the answer (the fast route), no synthesizer call.
      ],
    });
    const openai = await fakeOpenAI(brain);
    openai.contextWindow = WINDOW;
    // The files are the user's own (trust.trusted): the prompts carry them without spotlight markers, whose size this arithmetic does not count.
    const config = { providers: { openai: { contextWindow: WINDOW, maxTokens: 500 } }, trust: { trusted: ["**"] } };
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: "what do the four files hold?" }, {
      config,
      prepare: (workspace) => {
        for (let index = 0; index < 4; index += 1) writeFileSync(path.join(workspace, `f${index}.txt`), `${index} ${LOREM.repeat(400)}`);
      },
    });
    brain.assertDone();
    expect(result.status, result.error).toBe("completed");
    // Nothing was refused: every request was answered, each within the window (tool definitions included).
    for (const request of openai.requests) {
      expect(request.usage, `${request.role} request ${request.index} was refused`).toBeDefined();
      expect(request.usage?.input).toBeLessThanOrEqual(WINDOW);
      expect(request.maxTokens).toBe(500);
    }
    expect(result.trace.modelIncidents ?? []).toEqual([]);
    const research = openai.requestsFor("research").map((request) => JSON.stringify(request.body.messages));
    expect(research).toHaveLength(6);
    // A full-detail prompt shows a result's first 8,000 characters (296 lorems); these showed less, and the last has earlier results compacted.
    const shown = (text: string) => (text.match(/lorem/g) ?? []).length;
    expect(shown(research[1] as string)).toBeGreaterThan(0);
    expect(shown(research[1] as string)).toBeLessThan(200);
    expect(research.at(-1)).toContain('\\"compacted\\":true');
    expect(research.slice(0, -1).some((text) => text.includes("compacted"))).toBe(false);
  });
});
