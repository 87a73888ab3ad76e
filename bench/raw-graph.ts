import { randomUUID } from "node:crypto";
import path from "node:path";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { type AIMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { Annotation, type BaseCheckpointSaver, END, Send, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import type { PlannedSubtask } from "../src/core/plan.js";
import { roleLine, SECTIONS, section } from "../src/core/prompt-protocol.js";
import { TroupeCheckpointer } from "../src/store/checkpoints/sqlite.js";

/**
 * The floor troupe is measured against: the least a LangGraph graph needs to run the same plan
 * with the same model calls. A planner call, waves of `Send` fan-out to workers that each call
 * the model once, a join after each wave, a critic call and a synthesizer call. No validation,
 * no coordinator, no events, no store of its own.
 */
const RawState = Annotation.Root({
  task: Annotation<string>({ reducer: (_current, next) => next, default: () => "" }),
  plan: Annotation<PlannedSubtask[]>({ reducer: (_current, next) => next, default: () => [] }),
  results: Annotation<Record<string, string>>({ reducer: (current, next) => ({ ...current, ...next }), default: () => ({}) }),
  verdict: Annotation<unknown>({ reducer: (_current, next) => next, default: () => undefined }),
  answer: Annotation<string>({ reducer: (_current, next) => next, default: () => "" }),
});

type RawStateType = typeof RawState.State;

interface WorkerPayload {
  task: string;
  subtask: PlannedSubtask;
}

function textOf(message: AIMessage): string {
  return typeof message.content === "string" ? message.content : message.text;
}

/** The same prompt shape troupe uses (role on the first system line, `## Subtask` section), so the scripted model matches calls alike. */
async function ask(model: BaseChatModel, role: string, human: string): Promise<AIMessage> {
  return (await model.invoke([new SystemMessage(roleLine(role)), new HumanMessage(human)])) as AIMessage;
}

/** The next wave: a `Send` per subtask whose dependencies are done, or the critic once none is left. */
function nextWave(state: RawStateType): Send[] | "critic" {
  const ready = state.plan.filter((item) => state.results[item.id] === undefined && item.dependsOn.every((id) => state.results[id] !== undefined));
  if (ready.length === 0) return "critic";
  return ready.map((item) => new Send("worker", { task: state.task, subtask: item } satisfies WorkerPayload));
}

export function buildRawGraph(model: BaseChatModel, checkpointer?: BaseCheckpointSaver) {
  return new StateGraph(RawState)
    .addNode("planner", async (state: RawStateType) => {
      const reply = await ask(model, "planner", section(SECTIONS.task, state.task));
      const args = reply.tool_calls?.[0]?.args as { subtasks?: PlannedSubtask[] } | undefined;
      return { plan: args?.subtasks ?? [] };
    })
    .addNode("worker", async (input: RawStateType) => {
      const { task, subtask } = input as unknown as WorkerPayload;
      const human = [section(SECTIONS.task, task), section(SECTIONS.subtask, `${subtask.id} (${subtask.agent}): ${subtask.label}`)].join("\n\n");
      const reply = await ask(model, `${subtask.agent} worker`, human);
      return { results: { [subtask.id]: textOf(reply) } };
    })
    .addNode("join", () => ({}))
    .addNode("critic", async (state: RawStateType) => {
      const reply = await ask(model, "critic", section(SECTIONS.outcomes, JSON.stringify(state.results)));
      return { verdict: reply.tool_calls?.[0]?.args };
    })
    .addNode("synthesizer", async (state: RawStateType) => {
      const reply = await ask(model, "synthesizer", section(SECTIONS.outcomes, JSON.stringify(state.results)));
      return { answer: textOf(reply) };
    })
    .addEdge(START, "planner")
    .addConditionalEdges("planner", nextWave, ["worker", "critic"])
    .addEdge("worker", "join")
    .addConditionalEdges("join", nextWave, ["worker", "critic"])
    .addEdge("critic", "synthesizer")
    .addEdge("synthesizer", END)
    .compile({ checkpointer, name: "raw-floor" });
}

export type RawGraph = ReturnType<typeof buildRawGraph>;

export const RAW_DATABASE_FILE = "raw.db";

/**
 * A SQLite checkpointer on a database set up as troupe's store sets up its own (WAL,
 * synchronous FULL): LangGraph's stock SqliteSaver, which syncs every commit, or (for reference)
 * troupe's, which commits a task's writes unsynced and a superstep's checkpoint with its WAL sync started, not waited for.
 */
export function openRawCheckpointer(directory: string, options: { troupeCheckpointer?: boolean } = {}): { saver: SqliteSaver; db: Database.Database; close: () => void } {
  const db = new Database(path.join(directory, RAW_DATABASE_FILE));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.pragma("busy_timeout = 5000");
  return { saver: options.troupeCheckpointer ? new TroupeCheckpointer(db) : new SqliteSaver(db), db, close: () => db.close() };
}

/** One run of the raw graph on a fresh thread, with the same durability and concurrency troupe uses. */
export async function runRawGraph(graph: RawGraph, task: string, concurrency: number): Promise<{ state: RawStateType; threadId: string }> {
  const threadId = `raw-${randomUUID()}`;
  const state = await graph.invoke({ task }, { configurable: { thread_id: threadId }, durability: "sync", maxConcurrency: concurrency });
  return { state, threadId };
}
