/**
 * The Agent Protocol on Postgres with the run driven by another process: two API-only `troupe
 * serve` processes (behind a load balancer a client's next request may reach either) and a
 * `troupe worker`, LangGraph's SDK Client talking to the API processes. A stream, a question the
 * run asks, its answer by Command resume through the other API process, a replay, the thread's
 * listing and the store all go through the shared database and its notifications.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { Client } from "@langchain/langgraph-sdk";
import { afterEach, describe, expect, it } from "vitest";
import { answerStep, planStep, questionStep, subtask } from "../src/testing/script.js";
import { readScriptLog, tempDir, writeScript } from "./helpers.js";
import { freshDatabase } from "./postgres.js";
import { serveApi, startWorker, stopAll } from "./scale-out-helpers.js";

afterEach(stopAll);

type Part = { event: string; data: unknown; id?: string };
type Values = Record<string, unknown> & { __interrupt__?: Array<{ id: string; value: Record<string, unknown> }>; messages?: Array<{ type: string; content: string }> };

async function collect(stream: AsyncIterable<unknown>): Promise<Part[]> {
  const parts: Part[] = [];
  for await (const part of stream) parts.push(part as Part);
  return parts;
}

describe("the Agent Protocol with the run driven by a worker process (Postgres)", () => {
  it("streams a run, asks its question, takes the answer through the other API process, replays it there, and lists and stores through the shared database", async () => {
    const directory = tempDir("troupe-agent-protocol-pg-");
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace);
    const log = path.join(directory, "calls.jsonl");
    const env = {
      TROUPE_DATABASE_URL: await freshDatabase("agent_protocol"),
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "script.json", [
        questionStep("Which file should the word go to?"),
        planStep([subtask("s1", "execute", "Save the word", { tool: "file_write", args: { path: { value: "notes.txt" }, content: { value: "the word" } } })]),
        answerStep("Saved the word to notes.txt."),
      ]),
      TROUPE_SCRIPT_LOG: log,
      TROUPE_WORKSPACE: workspace,
    };
    const api = await serveApi(directory, env);
    const other = await serveApi(directory, env);
    const worker = await startWorker(directory, env, 2);
    const client = new Client({ apiUrl: `${api.url}/langgraph`, apiKey: null, callerOptions: { maxRetries: 0 } });
    const elsewhere = new Client({ apiUrl: `${other.url}/langgraph`, apiKey: null, callerOptions: { maxRetries: 0 } });

    const thread = await client.threads.create({ metadata: { team: "pg" } });
    const asked = await collect(client.runs.stream(thread.thread_id, "troupe", { input: { task: "save a word" }, streamMode: ["values", "updates"] }));
    const runId = (asked[0]?.data as { run_id: string }).run_id;
    const question = (asked.at(-1)?.data as Values).__interrupt__?.[0];
    expect(question?.value).toMatchObject({ kind: "question", question: "Which file should the word go to?", action_requests: [{ name: "answer_question" }] });

    // The other API process sees the same thread, waiting on the same interrupt.
    expect((await elsewhere.threads.search({ metadata: { team: "pg" } })).map((found) => [found.thread_id, found.status])).toEqual([[thread.thread_id, "interrupted"]]);
    const state = await elsewhere.threads.getState(thread.thread_id);
    expect(state.tasks.flatMap((task) => task.interrupts).map((interrupt) => interrupt.id)).toEqual([question?.id]);

    // Answered there: the worker takes the run up again, and that process streams it to its end.
    const resumed = await collect(elsewhere.runs.stream(thread.thread_id, "troupe", { command: { resume: "notes.txt" }, streamMode: ["values", "messages-tuple"] }));
    expect(resumed[0]).toMatchObject({ event: "metadata", data: { run_id: runId } });
    const last = resumed.filter((part) => part.event === "values").at(-1)?.data as Values;
    expect(last).toMatchObject({ status: "completed", answer: "Saved the word to notes.txt.", plan: [{ id: "s1", status: "done" }] });
    expect(resumed.some((part) => part.event === "messages")).toBe(true);
    // The stretch since the answer, replayed through the first API process, is the same stream, event for event.
    const replay = await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1", streamMode: ["values", "messages-tuple"] }));
    expect(replay.filter((part) => part.id).map((part) => [part.id, part.event])).toEqual(resumed.filter((part) => part.id).map((part) => [part.id, part.event]));
    expect((await client.runs.get(thread.thread_id, runId)).status).toBe("success");

    const planners = readScriptLog(log).filter((line) => line.role === "planner" && line.phase === "start");
    expect(new Set(planners.map((line) => line.pid))).toEqual(new Set([worker.pid]));

    await client.store.putItem(["notes"], "word", { text: "the word", file: "notes.txt" });
    expect((await elsewhere.store.getItem(["notes"], "word"))?.value).toEqual({ text: "the word", file: "notes.txt" });
    expect((await elsewhere.store.searchItems(["notes"], { query: "word" })).items.map((item) => item.key)).toEqual(["word"]);
  });
});
