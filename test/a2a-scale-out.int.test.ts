/**
 * A2A on Postgres with the runs driven by another process: two API-only `troupe serve` processes
 * (they run nothing; behind a load balancer a client's next request may reach either) and a
 * `troupe worker`, the official @a2a-js/sdk client talking to the API processes. Streaming,
 * resubscribing and cancelling follow the run through the store's notifications.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { answerStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { readScriptLog, tempDir, writeScript } from "./helpers.js";
import { freshDatabase } from "./postgres.js";
import { a2aClient, a2aMessage, sendRequest } from "./protocol-helpers.js";
import { serveApi, startWorker, stopAll, taskStatus, until } from "./scale-out-helpers.js";

afterEach(stopAll);

const save = (tag: string, delayMs: number) =>
  planStep([subtask("s1", "execute", "Save the word", { tool: "file_write", args: { path: { value: `${tag}.txt` }, content: { value: `written for ${tag}` } } })], { contains: `[${tag}]`, delayMs });

type Payload = StreamResponse["payload"];
const artifactIds = (payloads: Payload[]) => payloads.flatMap((payload) => (payload?.$case === "artifactUpdate" ? [payload.value.artifact?.artifactId] : []));
const lastState = (payloads: Payload[]) => {
  const last = payloads.filter((payload) => payload?.$case === "statusUpdate").at(-1);
  return last?.$case === "statusUpdate" ? last.value.status?.state : undefined;
};

describe("A2A with the run driven by a worker process (Postgres)", () => {
  it("streams, resubscribes and cancels a task whose run another process drives: live updates through the store's notifications", async () => {
    const directory = tempDir("troupe-a2a-scale-");
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace);
    const log = path.join(directory, "calls.jsonl");
    const env = {
      TROUPE_DATABASE_URL: await freshDatabase("a2a_scale"),
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "script.json", [
        save("stream", 800),
        save("resub", 2_500),
        // Long enough to be cancelled while it plans.
        save("cancel", 60_000),
        reviewStep(1, {}, { times: 3, delayMs: 300 }),
        answerStep("saved", { times: 3 }),
      ]),
      TROUPE_SCRIPT_LOG: log,
      TROUPE_WORKSPACE: workspace,
    };
    const api = await serveApi(directory, env);
    const other = await serveApi(directory, env);
    const worker = await startWorker(directory, env, 2);
    const client = await a2aClient(api.url);
    // The same caller through the other API process, which never saw the message that started the task.
    const elsewhere = await a2aClient(other.url);

    // A streamed message: the API process submits, the worker runs, the stream carries it all.
    const streamed: Payload[] = [];
    for await (const event of client.sendMessageStream(sendRequest(a2aMessage("save a word [stream]")))) streamed.push(event.payload);
    expect(streamed[0]?.$case).toBe("task");
    expect(artifactIds(streamed)).toEqual(["subtask:s1", "answer", "file:stream.txt"]);
    expect(lastState(streamed)).toBe(TaskState.TASK_STATE_COMPLETED);
    const file = streamed.find((payload) => payload?.$case === "artifactUpdate" && payload.value.artifact?.artifactId === "file:stream.txt");
    const part = file?.$case === "artifactUpdate" ? file.value.artifact?.parts[0]?.content : undefined;
    expect(part?.$case === "raw" ? Buffer.from(part.value).toString() : part).toBe("written for stream");
    const planners = readScriptLog(log).filter((line) => line.role === "planner" && line.phase === "start");
    expect(new Set(planners.map((line) => line.pid))).toEqual(new Set([worker.pid]));

    // Sent without waiting, then resubscribed through the other API process while the worker plans: the snapshot, then the live updates to the end.
    const started = (await client.sendMessage(sendRequest(a2aMessage("save a word [resub]"), true))) as Task;
    expect(started.status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED);
    await until(async () => ((await taskStatus(api.url, started.id)) === "running" ? true : undefined), "the worker to take the run");
    const followed: Payload[] = [];
    for await (const event of elsewhere.resubscribeTask({ tenant: "", id: started.id })) followed.push(event.payload);
    expect(followed[0]?.$case).toBe("task");
    expect(followed.some((payload) => payload?.$case === "statusUpdate" && payload.value.status?.state === TaskState.TASK_STATE_WORKING)).toBe(true);
    expect(artifactIds(followed)).toEqual(["subtask:s1", "answer", "file:resub.txt"]);
    expect(lastState(followed)).toBe(TaskState.TASK_STATE_COMPLETED);

    // Cancelled through the other API process while the worker plans: the cancel waits for the worker to stop it.
    const doomed = (await client.sendMessage(sendRequest(a2aMessage("save a word [cancel]"), true))) as Task;
    await until(async () => ((await taskStatus(api.url, doomed.id)) === "running" ? true : undefined), "the worker to take the run");
    const cancelled = await elsewhere.cancelTask({ tenant: "", id: doomed.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await taskStatus(api.url, doomed.id)).toBe("cancelled");
  });
});
