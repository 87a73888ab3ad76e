import { writeFileSync } from "node:fs";
import path from "node:path";
import { type Task, TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { fileArtifacts } from "../../src/server/a2a/task-view.js";
import { a2aClient, a2aMessage, listen, sendRequest } from "../protocol-helpers.js";
import { makeApp } from "../server-helpers.js";

const README_TASK = "compute 17% of 2,340 and save it to result.txt";

function fileBytes(task: Task, name: string): string | undefined {
  const part = task.artifacts.find((artifact) => artifact.name === name)?.parts[0];
  return part?.content?.$case === "raw" ? Buffer.from(part.content.value).toString() : undefined;
}

describe("A2A file artifacts and finished tasks", () => {
  it("sends a run's files as the bytes it wrote, kept by their recorded hash; after a restart they are read back and checked against it", async () => {
    const app = await makeApp();
    const client = await a2aClient(await listen(app));
    const task = (await client.sendMessage(sendRequest(a2aMessage(README_TASK)))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(fileBytes(task, "result.txt")).toBe("397.8");
    const recorded = (await app.troupe.show(task.id)).plan.flatMap((subtask) => subtask.artifacts ?? []).find((artifact) => artifact.path === "result.txt");
    expect(task.artifacts.find((artifact) => artifact.name === "result.txt")?.metadata).toMatchObject({ sha256: recorded?.sha256, bytes: 5 });
    expect(app.troupe.writtenFiles.get(recorded?.sha256 as string)?.toString()).toBe("397.8");

    // Someone changes the file after the run: the artifact is still what the run wrote, found by the hash it recorded.
    writeFileSync(path.join(app.directory, "workspace", "result.txt"), "tampered");
    const kept = await fileArtifacts(app.troupe, task.id);
    expect(kept.map((artifact) => [artifact.name, artifact.parts[0]?.content?.$case])).toEqual([["result.txt", "raw"]]);
    expect(kept[0]?.metadata).toMatchObject({ sha256: recorded?.sha256 });
    expect(Buffer.from(kept[0]?.parts[0]?.content?.$case === "raw" ? kept[0].parts[0].content.value : []).toString()).toBe("397.8");

    // Another process (or this one after a restart) has not kept them: it reads the file back, sees it changed, and says so.
    const restarted = await Troupe.create({ provider: "offline", dataDir: path.join(app.directory, "data"), workspace: path.join(app.directory, "workspace") });
    try {
      const readBack = await fileArtifacts(restarted, task.id);
      expect(readBack[0]?.parts[0]?.content).toMatchObject({ $case: "data", value: { path: "result.txt", sha256: recorded?.sha256, omitted: "changed since the run wrote it" } });
      writeFileSync(path.join(app.directory, "workspace", "result.txt"), "397.8");
      const restored = await fileArtifacts(restarted, task.id);
      expect(restored[0]?.parts[0]?.content?.$case).toBe("raw");
    } finally {
      restarted.close();
    }
  });

  it("a deleted run is not found at once, however it was deleted (DELETE /tasks/:id, another process's runs delete, gc), though its finished task was kept", async () => {
    const app = await makeApp();
    const client = await a2aClient(await listen(app));
    const finished = async (): Promise<Task> => {
      const task = (await client.sendMessage(sendRequest(a2aMessage(README_TASK)))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      // Read once more, so the finished task is the one kept in memory.
      expect((await client.getTask({ tenant: "", id: task.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      return task;
    };
    const gone = (id: string) => expect(client.getTask({ tenant: "", id, historyLength: undefined })).rejects.toThrow(/not found/i);

    const viaApi = await finished();
    const deleted = await app.app.inject({ method: "DELETE", url: `/api/v1/tasks/${viaApi.id}` });
    expect(deleted.statusCode).toBe(200);
    await gone(viaApi.id);

    // `troupe runs delete` runs in its own process, with its own instance on the same data: nothing of this server's memory is told.
    const viaOtherProcess = await finished();
    const other = await Troupe.create({ provider: "offline", dataDir: path.join(app.directory, "data"), workspace: path.join(app.directory, "workspace") });
    try {
      expect((await other.deleteRun(viaOtherProcess.id)).runs).toBe(1);
    } finally {
      other.close();
    }
    await gone(viaOtherProcess.id);

    const viaGc = await finished();
    expect((await app.troupe.gc({ cutoff: Date.now() + 1_000 })).runs).toBeGreaterThanOrEqual(1);
    await gone(viaGc.id);
    await expect(client.resubscribeTask({ tenant: "", id: viaGc.id }).next()).rejects.toThrow(/not found/i);
  });
});
