import { spawn } from "node:child_process";
import Database from "better-sqlite3";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { RunResult } from "../src/core/run.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { CLI, cleanEnv, eventsOf, readScriptLog, runCli, runScripted, tempDir, writeScript } from "./helpers.js";
import { waitFor } from "./wait.js";

describe("the shared board", () => {
  it("carries a message between two subtasks running side by side, into the state, the trace and the events", async () => {
    const { result, events, model } = await runScripted(
      [
        planStep([
          subtask("s1", "research", "Find the launch code and tell s2", { tools: ["board_post"] }),
          subtask("s2", "execute", "Wait for the launch code from s1, then report it", { tools: ["board_read"] }),
        ]),
        toolStep("s1", "board_post", { to: "s2", text: "the launch code is 0451" }),
        finalStep("s1", "told s2", { contains: '"ok":true' }),
        // s2 reads a moment later, while s1 has finished and both are still inside one execute step.
        toolStep("s2", "board_read", {}, { delayMs: 300 }),
        finalStep("s2", "0451", { contains: "the launch code is 0451" }),
        reviewStep(0.9),
        answerStep("The launch code is 0451."),
      ],
      { task: "pass the launch code along" },
    );
    model.assertDone();
    expect(result.status).toBe("completed");
    // The two ran at once: s2's read began before s1's post was in any checkpoint.
    const starts = eventsOf(events, "subtask-start").map((event) => event.subtaskId);
    expect(starts).toEqual(["s1", "s2"]);
    expect(result.plan.map((view) => [view.id, view.status, view.summary])).toEqual([
      ["s1", "done", "told s2"],
      ["s2", "done", "0451"],
    ]);
    expect(result.trace.board).toEqual([
      { id: "s1.1.1", from: "s1", agent: "research", audience: { kind: "subtask", id: "s2" }, text: "the launch code is 0451", at: expect.any(Number), round: 0 },
    ]);
    expect(eventsOf(events, "board-post").map((event) => event.message.id)).toEqual(["s1.1.1"]);
    expect(result.trace.toolCalls.find((call) => call.tool === "board_read")).toMatchObject({ subtaskId: "s2", ok: true, preview: "1 message" });
    // Each worker was offered its agent's own tools and what its plan named, and find_tools for more.
    const offered = model.callsFor("execute", "s2")[0]?.tools ?? [];
    expect(offered.slice(-2)).toEqual(["find_tools", "submit_result"]);
    expect(offered).toContain("board_read");
    expect(offered).toContain("calculator");
    expect(offered).not.toContain("web_search");
  });

  it("addresses messages to a subtask, an agent, a topic or everyone; a reader sees only its own, and a later subtask finds them in its prompt", async () => {
    const { result, model } = await runScripted(
      [
        planStep([
          subtask("s1", "research", "Announce the findings", { tools: ["board_post"] }),
          subtask("s2", "execute", "Act on what was announced", { dependsOn: ["s1"], tools: ["board_read"] }),
        ]),
        toolStep("s1", "board_post", { text: "to everyone: the data is in data.csv" }),
        toolStep("s1", "board_post", { to: "code", text: "to the code agent: use pandas" }, { contains: "s1.1.1" }),
        toolStep("s1", "board_post", { topic: "prices", text: "on prices: they rose 3%" }, { contains: "s1.1.2" }),
        toolStep("s1", "board_post", { to: "nobody", text: "lost" }, { contains: "s1.1.3" }),
        finalStep("s1", "announced", { contains: "unknown_recipient" }),
        toolStep("s2", "board_read", {}),
        toolStep("s2", "board_read", { topics: ["prices"] }, { contains: "the data is in data.csv" }),
        finalStep("s2", "read the board", { contains: "they rose 3%" }),
        reviewStep(0.9),
        answerStep("done"),
      ],
      { task: "announce and act" },
    );
    model.assertDone();
    expect(result.status).toBe("completed");
    expect(result.trace.board.map((message) => [message.id, message.audience])).toEqual([
      ["s1.1.1", { kind: "everyone" }],
      ["s1.1.2", { kind: "agent", name: "code" }],
      ["s1.1.3", { kind: "topic", name: "prices" }],
    ]);
    // s2 (execute) started after s1: its prompt's Board section shows what is addressed to it, and not the code agent's message.
    const firstCall = model.callsFor("execute", "s2")[0];
    expect(firstCall?.lastMessage).toContain("## Board\n- s1.1.1 from s1 (research) to everyone: to everyone: the data is in data.csv");
    expect(firstCall?.lastMessage).not.toContain("use pandas");
    const reads = result.trace.toolCalls.filter((call) => call.tool === "board_read").map((call) => call.preview);
    expect(reads).toEqual(["1 message", "2 messages"]);
    const refused = result.trace.toolCalls.find((call) => call.tool === "board_post" && !call.ok);
    expect(refused?.preview).toMatch(/^unknown_recipient: "nobody" is neither a subtask of this plan \(s1, s2\) nor an agent/);
  });

  it("keeps a finished subtask's posts across a crash: the run resumes, the other subtask reads them, and nothing runs twice", async () => {
    const directory = tempDir();
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace, { recursive: true });
    const log = path.join(directory, "calls.jsonl");
    const plan = planStep([
      subtask("s1", "research", "Find the password and post it for s2", { tools: ["board_post"] }),
      subtask("s2", "execute", "Read the password from the board and report it", { tools: ["board_read"] }),
    ]);
    const before = [
      plan,
      toolStep("s1", "board_post", { to: "s2", text: "the password is swordfish" }),
      finalStep("s1", "posted the password", { contains: '"ok":true' }),
      // s2's first model call never returns: the process is killed in it, after s1 has finished.
      toolStep("s2", "board_read", {}, { gate: "never" }),
    ];
    const child = spawn(process.execPath, [CLI, "run", "share the password", "--json", "--thread", "board-crash", "--workspace", workspace], {
      cwd: directory,
      env: { ...cleanEnv(), TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, "before.json", before), TROUPE_SCRIPT_LOG: log },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    const database = path.join(directory, ".troupe", "troupe.db");
    // Killed once s1's end is recorded and s2 waits in its model call.
    const s1Ended = (): boolean => {
      if (!readScriptLog(log).some((line) => line.phase === "start" && line.subtask === "s2") || !existsSync(database)) return false;
      const db = new Database(database, { readonly: true });
      try {
        return (db.prepare("SELECT COUNT(*) AS count FROM events WHERE type = 'subtask-end' AND data LIKE '%\"subtaskId\":\"s1\"%'").get() as { count: number }).count > 0;
      } finally {
        db.close();
      }
    };
    await waitFor(() => (s1Ended() ? true : undefined), () => `s1 to finish: ${JSON.stringify(readScriptLog(log))}`, 25);
    // Its task's writes follow its end event at once.
    await sleep(300);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");

    // The resumed run has no step for s1: were it run again, the scripted model would refuse the call.
    const resumed = await runCli(["resume", "board-crash", "--json", "--workspace", workspace], {
      cwd: directory,
      env: {
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "after.json", [
          toolStep("s2", "board_read", {}),
          finalStep("s2", "swordfish", { contains: "the password is swordfish" }),
          reviewStep(0.9),
          answerStep("The password is swordfish."),
        ]),
        TROUPE_SCRIPT_LOG: log,
      },
    });
    expect(resumed.stderr).not.toMatch(/unexpected|no step/);
    expect(resumed.code).toBe(0);
    const result = JSON.parse(resumed.stdout) as RunResult;
    expect(result.status).toBe("completed");
    expect(result.plan.map((view) => [view.id, view.status, view.summary, view.attempts])).toEqual([
      ["s1", "done", "posted the password", 1],
      ["s2", "done", "swordfish", 1],
    ]);
    expect(result.trace.board.map((message) => [message.id, message.from, message.text])).toEqual([["s1.1.1", "s1", "the password is swordfish"]]);
    // s1's model was called twice in all: in the first process only.
    expect(readScriptLog(log).filter((line) => line.phase === "start" && line.subtask === "s1")).toHaveLength(2);
  });
});
