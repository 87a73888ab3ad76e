import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseEnv } from "../../src/config/env.js";
import type { StoredEvent } from "../../src/core/events.js";
import { STRUCTURED_OUTPUT } from "../../src/core/prompt-protocol.js";
import { Troupe } from "../../src/runtime/engine.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { catalogueTools } from "../../src/testing/tool-catalogue.js";
import { createBuiltinRegistry } from "../../src/tools/builtin/index.js";
import { envFor, fakeOpenAI } from "../provider-helpers.js";
import { eventsOf, runScripted, tempDir } from "../helpers.js";

const CATALOGUE = catalogueTools();

describe("tools found by retrieval", () => {
  it("offers a worker whose agent may use 200+ tools its own tools, the top 5 of the others for its subtask and find_tools; what it finds is offered next; the trace says why", async () => {
    const { result, model, events, troupe } = await runScripted(
      [
        planStep([subtask("s1", "research", "Schedule a team meeting on Friday at 10:00 with Ana and Bo, and tell them")]),
        toolStep("s1", "calendar.create_event", { title: "Team meeting", start: "Friday 10:00", attendees: ["Ana", "Bo"] }),
        toolStep("s1", "find_tools", { query: "send an email to people" }, { contains: '"ok":true' }),
        toolStep("s1", "gmail.send_email", { to: ["Ana", "Bo"], subject: "Agenda" }, { contains: "offered from your next step" }),
        finalStep("s1", "scheduled and emailed", { contains: "gmail.send_email" }),
        reviewStep(0.9),
        // One subtask: the worker's result is the answer (the fast route), no synthesizer call.
      ],
      { task: "set up the meeting" },
      { extraTools: CATALOGUE },
    );
    model.assertDone();
    expect(result.status).toBe("completed");
    const calls = model.callsFor("research", "s1");
    const own = troupe.agents.get("research")?.coreTools ?? [];
    expect(own).toEqual(["web_search", "http_fetch", "file_read", "file_list", "text_stats", "json", "calculator"]);
    // The first call: its own tools, five found for the subtask, find_tools and submit_result — not the 209 research may use.
    expect(calls[0]?.tools).toHaveLength(own.length + 5 + 2);
    for (const name of own) expect(calls[0]?.tools).toContain(name);
    expect(calls[0]?.tools).toContain("calendar.create_event");
    expect(calls[0]?.tools.slice(-2)).toEqual(["find_tools", STRUCTURED_OUTPUT.result]);
    // After find_tools, the tool it found is offered too.
    expect(calls[2]?.tools).toContain("gmail.send_email");
    expect(calls[0]?.tools).not.toContain("gmail.send_email");
    const offer = result.plan[0]?.offer;
    expect(offer).toMatchObject({ via: "retrieval", total: 211 });
    expect(offer?.offered).toHaveLength(own.length + 5);
    expect(offer?.offered.find((tool) => tool.name === "file_read")?.why).toBe("its agent's own tool");
    expect(offer?.offered.find((tool) => tool.name === "calendar.create_event")?.why).toMatch(/^BM25 [\d.]+ on schedul/);
    expect(offer?.found).toEqual([{ query: "send an email to people", names: expect.arrayContaining(["gmail.send_email"]) }]);
    expect(eventsOf(events, "tools-offer").map((event) => event.offer.found.length)).toEqual([0, 1]);
    expect(result.trace.toolCalls.map((call) => [call.tool, call.ok])).toEqual([
      ["calendar.create_event", true],
      ["gmail.send_email", true],
    ]);
  });

  it("never offers, nor finds, a tool the agent may not use", async () => {
    const { result, model } = await runScripted(
      [
        planStep([subtask("s1", "research", "Write the meeting notes to notes.txt and post them to Slack")]),
        toolStep("s1", "find_tools", { query: "write a file to the workspace" }),
        finalStep("s1", "UNABLE: I cannot write files", { contains: '"ok":true' }),
        reviewStep(0.9),
        answerStep("Not done."),
      ],
      { task: "write the notes" },
      { extraTools: CATALOGUE },
    );
    model.assertDone();
    const offered = [...(result.plan[0]?.offer?.offered.map((tool) => tool.name) ?? []), ...(result.plan[0]?.offer?.found.flatMap((entry) => entry.names) ?? [])];
    expect(offered.length).toBeGreaterThan(0);
    // research reads only: none of the workspace writers, whatever the words.
    for (const name of ["file_write", "file_append", "file_move", "file_copy", "file_delete", "code_run"]) expect(offered).not.toContain(name);
    for (const call of model.callsFor("research", "s1")) expect(call.tools).not.toContain("file_write");
  });

  it("offers every tool to an agent with no more than the threshold, and no find_tools", async () => {
    const { model, troupe } = await runScripted(
      [planStep([subtask("s1", "code", "Write hello.py")]), finalStep("s1", "written"), reviewStep(0.9)], // the fast route: no synthesizer
      { task: "write hello.py" },
      { extraTools: CATALOGUE },
    );
    model.assertDone();
    // code holds no READ pattern: none of the catalogue's READ tools reach it, so it stays under the threshold.
    const codeTools = troupe.agents.get("code")?.tools ?? [];
    expect(codeTools.some((name) => name.includes("."))).toBe(false);
    expect(model.callsFor("code", "s1")[0]?.tools).toEqual([...codeTools, STRUCTURED_OUTPUT.result]);
  });

  it("ranks with the provider's embeddings too, through the real OpenAI client", async () => {
    const brain = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "research", "Translate the welcome message into Japanese")]),
        toolStep("s1", "translate.translate_text", { text: "Welcome", target_language: "ja" }),
        finalStep("s1", "ようこそ", { contains: '"ok":true' }),
        reviewStep(0.9),
        // One subtask: the worker's result is the answer (the fast route), no synthesizer call.
      ],
    });
    const openai = await fakeOpenAI(brain);
    const directory = tempDir();
    const tools = createBuiltinRegistry();
    for (const tool of CATALOGUE) tools.register(tool);
    const troupe = await Troupe.create({ env: parseEnv(envFor({ openai }, { TROUPE_PROVIDER: "openai" })), config: {}, tools, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "translate the welcome message" }, { onEvent: (event) => events.push(event) });
      brain.assertDone();
      expect(result.status).toBe("completed");
      // The tools embedded once, in one request, and the subtask's query.
      expect(openai.embeddingRequests[0]).toMatchObject({ model: "text-embedding-3-small" });
      expect(openai.embeddingRequests[0]?.input).toHaveLength(tools.names().length);
      expect(openai.embeddingRequests[1]?.input).toEqual(["Translate the welcome message into Japanese"]);
      const offer = result.plan[0]?.offer;
      expect(offer?.via).toBe("retrieval");
      expect(offer?.offered.find((tool) => tool.name === "translate.translate_text")?.why).toMatch(/BM25 .*; embedding similarity 0\.\d+/);
      const worker = openai.requestsFor("research")[0]?.body.tools as Array<{ function: { name: string } }>;
      // Its own 7 tools, the 5 found, find_tools and submit_result.
      expect(worker.map((tool) => tool.function.name)).toHaveLength(14);
    } finally {
      troupe.close();
    }
  });
});
