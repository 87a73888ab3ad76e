import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { State } from "../../src/graph/state.js";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { HashingEmbeddings } from "../../src/testing/hashing-embeddings.js";
import { tempDir } from "../helpers.js";

/** An engine on a shared data directory and workspace, answering from a script. */
async function engine(directory: string, steps: ScriptStep[], options: { embeddings?: HashingEmbeddings } = {}): Promise<{ troupe: Troupe; model: ScriptedChatModel }> {
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    ...(options.embeddings ? { embeddings: { embeddings: options.embeddings, model: "test:hashing" } } : {}),
  });
  return { troupe, model };
}

describe("a thread's conversation with a real model's protocol (scripted)", () => {
  it("shows the planner the earlier turn with its handle; the handle carries 1 MB exactly while the state stays small", async () => {
    const directory = tempDir();
    mkdirSync(path.join(directory, "workspace"), { recursive: true });
    const big = `${"Line with trailing spaces   \r\nCafé ✓ 漢字\t".repeat(20_000)}end`;
    writeFileSync(path.join(directory, "workspace", "in.txt"), big);

    const first = await engine(directory, [
      planStep([subtask("s1", "research", "Read in.txt", { tool: "file_read", args: { path: { value: "in.txt" } }, reads: ["in.txt"], writes: [] })]),
      // A direct tool result, but of a workspace file, untrusted on the defaults: review auto keeps the critic; the synthesizer words it.
      reviewStep(0.9),
      answerStep("in.txt holds about a megabyte of text."),
    ]);
    const read = await first.troupe.run({ task: "read in.txt", threadId: "t1" });
    first.troupe.close();
    first.model.assertDone();
    expect(read.status).toBe("completed");
    const handle = `stash:${read.runId}/s1`;

    const second = await engine(directory, [
      // The planner is told of the earlier turn and its handle, and plans to take it back by that handle.
      planStep(
        [
          subtask("s1", "research", "Take the earlier file's text", { tool: "thread_result", args: { handle: { value: handle } } }),
          subtask("s2", "execute", "Save it to out.txt", { tool: "file_write", dependsOn: ["s1"], args: { path: { value: "out.txt" }, content: { ref: "s1", path: "$.content" } }, reads: [], writes: ["out.txt"] }),
        ],
        { contains: handle },
      ),
      // Direct tool results, carrying the earlier turn's untrusted file: review auto keeps the critic.
      reviewStep(0.9),
      answerStep("Saved it to out.txt."),
    ]);
    const saved = await second.troupe.run({ task: "save it to out.txt", threadId: "t1" });
    second.model.assertDone();
    expect(saved.status).toBe("completed");
    expect(readFileSync(path.join(directory, "workspace", "out.txt"), "utf8")).toBe(big);

    const planner = second.model.calls.find((call) => call.role === "planner");
    expect(planner?.lastMessage).toContain("## Conversation");
    expect(planner?.lastMessage).toContain('"task":"read in.txt"');
    expect(planner?.lastMessage.length).toBeLessThan(6_000);

    // The conversation is a channel of the thread's checkpoint: both turns, handles and bounded text only.
    const values = (await second.troupe.graph.getState({ configurable: { thread_id: "t1" } })).values as State;
    expect(values.conversation.turns.map((turn) => turn.run)).toEqual([read.runId, saved.runId]);
    expect(values.conversation.turns[1]?.files).toEqual(["out.txt"]);
    expect(values.conversation.turns[1]?.results[1]).toMatchObject({ subtask: "s2", wrote: true });
    expect(JSON.stringify(values.conversation).length).toBeLessThan(4_000);
    second.troupe.close();
  });

  it("refuses a handle of another thread's run", async () => {
    const directory = tempDir();
    const first = await engine(directory, [planStep([subtask("s1", "execute", "Compute 6*7", { tool: "calculator", args: { expression: { value: "6*7" } } })]), reviewStep(1), answerStep("42")]);
    const elsewhere = await first.troupe.run({ task: "compute 6*7", threadId: "private" });
    first.troupe.close();
    const second = await engine(directory, [
      planStep([subtask("s1", "research", "Take a result", { tool: "thread_result", args: { handle: { value: `stash:${elsewhere.runId}/s1` } } })]),
      reviewStep(0.2),
      answerStep("no"),
    ]);
    const stolen = await second.troupe.run({ task: "take it", threadId: "intruder" });
    second.troupe.close();
    expect(stolen.status).toBe("failed");
    expect(stolen.plan[0]?.error).toMatch(/^not_in_thread: .* is not a result of this conversation/);
  });

  it("gives the planner the relevant memories, found by meaning as well as words when an embeddings model is set", async () => {
    const directory = tempDir();
    const embeddings = new HashingEmbeddings();
    const { troupe, model } = await engine(
      directory,
      [
        planStep([subtask("s1", "execute", "Compute 1+1", { tool: "calculator", args: { expression: { value: "1+1" } } })], { contains: "Alice's favourite colour is teal" }),
        // A verified direct tool result: review auto skips the critic.
        answerStep("2"),
      ],
      { embeddings },
    );
    const { memoryNamespaceFor } = await import("../../src/runtime/memory-owner.js");
    await troupe.store.memories.save(memoryNamespaceFor(null), { text: "Alice's favourite colour is teal", subject: "alice's favourite colour" });
    const result = await troupe.run({ task: "paint the fence in Alice's favorite color" });
    troupe.close();
    model.assertDone();
    expect(result.trace.memories).toMatchObject({ retrieval: "hybrid", items: [expect.objectContaining({ text: "Alice's favourite colour is teal" })] });
    const planner = model.calls.find((call) => call.role === "planner");
    expect(planner?.lastMessage).toMatch(/## Remembered facts\n- m-[0-9a-f]{12}: Alice's favourite colour is teal/);
  });

  it("keeps an eval case's run to a memory of its own: it neither sees the user's facts nor leaves any", async () => {
    const directory = tempDir();
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    try {
      const { memoryNamespaceFor } = await import("../../src/runtime/memory-owner.js");
      const user = memoryNamespaceFor(null);
      await troupe.store.memories.save(user, { text: "the capital of Atlantis is Poseidonia", subject: "the capital of Atlantis" });
      const asCase = await troupe.run({ task: "What is the capital of Atlantis?" }, { evalId: "eval-1" });
      expect(asCase.status).toBe("failed");
      expect(asCase.trace.memories?.items).toEqual([]);
      await troupe.run({ task: "remember that the capital of Lemuria is Mu" }, { evalId: "eval-1" });
      expect((await troupe.store.memories.list(user)).total).toBe(1);
      const asUser = await troupe.run({ task: "What is the capital of Atlantis?" });
      expect(asUser.status).toBe("completed");
      expect(asUser.answer).toContain("Poseidonia");
    } finally {
      troupe.close();
    }
  });
});
