import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { waitFor } from "../../test/wait.js";
import { canStream, routeFor } from "../providers/registry.js";
import { modelSetOf } from "./model-set.js";
import { answerStep, finalStep, planStep, subtask } from "./script.js";
import { ScriptedChatModel } from "./scripted-chat-model.js";

const synthesizer = [new SystemMessage("You are the troupe synthesizer."), new HumanMessage("## Task\nx")];
const planner = [new SystemMessage("You are the troupe planner."), new HumanMessage("## Task\nx")];
const worker = (id: string) => [new SystemMessage("You are the troupe research worker."), new HumanMessage(`## Subtask\n${id} (research): find`)];

describe("ScriptedChatModel", () => {
  it("answers each call from the first matching unused step and records the call", async () => {
    const model = new ScriptedChatModel({ steps: [finalStep("s2", "second"), finalStep("s1", "first"), answerStep("final", { usage: { input: 10, output: 2 } })] });
    // A worker's final step ends its subtask through submit_result, as workers are told to.
    const resultOf = async (id: string) => (await model.invoke(worker(id))).tool_calls?.map((call) => [call.name, call.args.status, call.args.result]);
    expect(await resultOf("s1")).toEqual([["submit_result", "done", "first"]]);
    expect(await resultOf("s2")).toEqual([["submit_result", "done", "second"]]);
    const answer = await model.invoke(synthesizer);
    expect(answer.content).toBe("final");
    expect(answer.usage_metadata).toEqual({ input_tokens: 10, output_tokens: 2, total_tokens: 12 });
    expect(model.calls.map((call) => [call.role, call.subtask])).toEqual([
      ["research", "s1"],
      ["research", "s2"],
      ["synthesizer", undefined],
    ]);
    expect(() => model.assertDone()).not.toThrow();
  });

  it("fails an unexpected call and reports it, and reports unused steps", async () => {
    const model = new ScriptedChatModel({ steps: [finalStep("s1", "first")] });
    await expect(model.invoke(synthesizer)).rejects.toThrow(/no step for this call \(role synthesizer/);
    expect(() => model.assertDone()).toThrow(/unexpected model call \(role synthesizer/);
    const unused = new ScriptedChatModel({ steps: [finalStep("s1", "first"), answerStep("never")] });
    await unused.invoke(worker("s1"));
    expect(() => unused.assertDone()).toThrow(/1 scripted step\(s\) were not used/);
  });

  it("hands bound tools to the call", async () => {
    const model = new ScriptedChatModel({ steps: [{ role: "worker", content: "ok" }] });
    await model.bindTools([{ type: "function", function: { name: "calculator", description: "math", parameters: { type: "object", properties: {} } } }]).invoke(worker("s1"));
    expect(model.calls[0]?.tools).toEqual(["calculator"]);
  });

  it("streams a text reply word by word, the last piece with the finish reason and the usage; turned off, in one piece", async () => {
    const model = new ScriptedChatModel({ steps: [answerStep("The answer is **42**.", { usage: { input: 7, output: 5 } })] });
    const pieces = [];
    for await (const chunk of await model.stream(synthesizer)) pieces.push(chunk);
    expect(pieces.map((chunk) => chunk.text)).toEqual(["The", " answer", " is", " **42**."]);
    expect(pieces.at(-1)?.response_metadata).toMatchObject({ finish_reason: "stop" });
    expect(pieces.at(-1)?.usage_metadata).toEqual({ input_tokens: 7, output_tokens: 5, total_tokens: 12 });
    expect(model.calls).toHaveLength(1);
    expect(canStream(model)).toBe(true);
    expect(routeFor(modelSetOf(model), "synthesizer").candidates[0]?.streams).toBe(true);

    const whole = new ScriptedChatModel({ steps: [answerStep("The answer is 42.")], streaming: false });
    const chunks = [];
    for await (const chunk of await whole.stream(synthesizer)) chunks.push(chunk);
    expect(chunks.map((chunk) => chunk.text)).toEqual(["The answer is 42."]);
    expect(canStream(whole)).toBe(false);
    expect(routeFor(modelSetOf(whole), "synthesizer").candidates[0]?.streams).toBe(false);
  });
  it("holds a gated reply until the test opens the gate, and a cancelled call stops waiting", async () => {
    const model = new ScriptedChatModel({ steps: [finalStep("s1", "first", { gate: "go" }), finalStep("s2", "second", { gate: "never" })] });
    let replied = false;
    const first = model.invoke(worker("s1")).then((message) => {
      replied = true;
      return message;
    });
    // The call has started and waits at its gate: a state, not a delay.
    await waitFor(() => (model.calls.length === 1 ? true : undefined), "the gated call to start");
    await new Promise((resolve) => setImmediate(resolve));
    expect(replied).toBe(false);
    model.open("go");
    expect((await first).tool_calls?.[0]?.args.result).toBe("first");
    const stop = new AbortController();
    const second = model.invoke(worker("s2"), { signal: stop.signal });
    await waitFor(() => (model.calls.length === 2 ? true : undefined), "the second gated call to start");
    stop.abort(new Error("cancelled by the test"));
    await expect(second).rejects.toThrow(/cancelled by the test/);
  });

  it("holds a streamed reply's last piece until the named call has started, and records which call let it go", async () => {
    const plan = [subtask("s1", "research", "First"), subtask("s2", "research", "Second")];
    const model = new ScriptedChatModel({ steps: [{ ...planStep(plan), streamPieces: 20, holdLastPieceFor: { role: "research", subtask: "s1" } }, finalStep("s1", "one")] });
    const pieces: number[] = [];
    const streaming = (async () => {
      for await (const _chunk of await model.stream(planner)) pieces.push(model.calls[0]?.piecesSent ?? 0);
    })();
    await waitFor(() => (model.calls[0]?.piecesTotal !== undefined && model.calls[0].piecesSent === model.calls[0].piecesTotal - 1 ? true : undefined), "all but the last piece to be sent");
    await new Promise((resolve) => setImmediate(resolve));
    // Everything but the last piece is out, and it stays held.
    expect(model.calls[0]?.piecesSent).toBe((model.calls[0]?.piecesTotal ?? 0) - 1);
    await model.invoke(worker("s1"));
    await streaming;
    expect(model.calls[0]?.releasedBy).toBe(1);
    expect(pieces.at(-1)).toBe(model.calls[0]?.piecesTotal);
    model.assertDone();
  });
  it("replies to a step with `after` only once the named call has ended", async () => {
    const model = new ScriptedChatModel({ steps: [finalStep("s1", "first", { after: { role: "research", subtask: "s2" } }), finalStep("s2", "second", { gate: "go" })] });
    const first = model.invoke(worker("s1"));
    const second = model.invoke(worker("s2"));
    await waitFor(() => (model.calls.length === 2 ? true : undefined), "both calls to start");
    await new Promise((resolve) => setImmediate(resolve));
    expect(model.calls.map((call) => call.endedAt)).toEqual([undefined, undefined]);
    model.open("go");
    await Promise.all([first, second]);
    const [s1, s2] = model.calls;
    expect(s1?.endedAt).toBeGreaterThanOrEqual(s2?.endedAt ?? Number.POSITIVE_INFINITY);
    model.assertDone();
  });
});
