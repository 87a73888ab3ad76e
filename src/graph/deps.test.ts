import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { RUN_EVENT_CALLBACK, type RunEvent } from "../core/events.js";
import { announce, emit, EVENTS_KEY } from "./deps.js";

/** A callback handler that records the run events it is handed as custom events. */
class Recorder extends BaseCallbackHandler {
  name = "recorder";
  override awaitHandlers = true;
  readonly seen: string[] = [];

  constructor(ignoreCustomEvent: boolean) {
    super();
    this.ignoreCustomEvent = ignoreCustomEvent;
  }

  override handleCustomEvent(eventName: string, data: unknown): void {
    if (eventName === RUN_EVENT_CALLBACK) this.seen.push((data as RunEvent).type);
  }
}

const EVENTS: RunEvent[] = [
  { type: "step-start", step: "intake" },
  { type: "subtask-start", subtaskId: "s1", label: "one", agent: "worker", attempt: 1 },
  { type: "subtask-end", subtaskId: "s1", status: "done", durationMs: 1 },
  { type: "step-end", step: "intake", outcome: "done", durationMs: 2 },
];

/** A one-node graph that emits (and announces) the events above and one that is not about work at hand; what the stream and each handler got. */
async function drive(handlers: Recorder[], sink?: (event: RunEvent) => void): Promise<string[]> {
  const graph = new StateGraph(Annotation.Root({ n: Annotation<number> }))
    .addNode("work", async (_state, config: LangGraphRunnableConfig) => {
      const [first, ...rest] = EVENTS as [RunEvent, ...RunEvent[]];
      await announce(config, first);
      for (const event of rest) emit(config, event);
      emit(config, { type: "answer-token", text: "hello" });
      // Let the handlers' deliveries that `emit` does not wait for settle before the node ends.
      await new Promise((resolve) => setImmediate(resolve));
      return { n: 1 };
    })
    .addEdge(START, "work")
    .addEdge("work", END)
    .compile();
  const streamed: string[] = [];
  const configurable = sink ? { [EVENTS_KEY]: sink } : {};
  for await (const chunk of await graph.stream({ n: 0 }, { streamMode: "custom", callbacks: handlers, configurable })) streamed.push((chunk as RunEvent).type);
  return streamed;
}

describe("run events to the callback handlers", () => {
  it("hands each event about work at hand to a handler that takes custom events once, and every event to the stream", async () => {
    const listening = new Recorder(false);
    const ignoring = new Recorder(true);
    const streamed = await drive([listening, ignoring]);
    expect(streamed).toEqual([...EVENTS.map((event) => event.type), "answer-token"]);
    expect(listening.seen).toEqual(EVENTS.map((event) => event.type));
    expect(ignoring.seen).toEqual([]);
  });

  it("dispatches nothing when every handler ignores custom events, and the stream still has every event", async () => {
    const ignoring = new Recorder(true);
    const streamed = await drive([ignoring]);
    expect(streamed).toEqual([...EVENTS.map((event) => event.type), "answer-token"]);
    expect(ignoring.seen).toEqual([]);
  });

  it("hands every event to a drive's sink as it is emitted, in order, instead of the stream, and the handlers still get theirs", async () => {
    const listening = new Recorder(false);
    const taken: string[] = [];
    const streamed = await drive([listening], (event) => taken.push(event.type));
    expect(taken).toEqual([...EVENTS.map((event) => event.type), "answer-token"]);
    expect(streamed).toEqual([]);
    expect(listening.seen).toEqual(EVENTS.map((event) => event.type));
  });
});
