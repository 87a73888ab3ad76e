import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ElicitationQuestion } from "../src/core/elicitation.js";
import { describeElicitation } from "../src/core/elicitation-prompt.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { writeFileSync } from "node:fs";
import { ROOT, runCli, tempDir, writeScript } from "./helpers.js";

// On main, troupe's MCP client declared no capabilities: a server that asked the person anything
// got "Method not found" and its call failed. Here its question becomes the run's own question to a
// person, survives the run pausing (and another process resuming it), and reaches the server as
// the person answered it.

const FIXTURE = path.join(ROOT, "test/fixtures/mcp-elicit-server.mjs");
const GRANT = { permissions: { grants: [{ agent: "execute", tool: "elicit.*", level: "EXECUTE", grantedBy: "test" }] } };

interface Received {
  tool: string;
  flight?: string;
  action: string;
  content?: Record<string, unknown>;
  index?: number;
}

function received(log: string): Received[] {
  try {
    return readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Received);
  } catch {
    return [];
  }
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill();
});

async function engine(directory: string, server: Record<string, unknown>, steps: ScriptStep[] = []) {
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    toolsConfig: { mcp: { servers: { elicit: server } }, ...GRANT },
  });
  return { troupe, model };
}

const stdio = (log: string, extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [FIXTURE], env: { ELICIT_LOG: log }, ...extra });

/** The fixture over streamable HTTP (sessions), in its own process; resolves with its URL. */
async function httpServer(log: string): Promise<string> {
  const child = spawn(process.execPath, [FIXTURE, "--http"], { env: { ...process.env, ELICIT_LOG: log }, stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const port = await new Promise<string>((resolve, reject) => {
    let seen = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening (\d+)/.exec(seen);
      if (match) resolve(match[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`the fixture exited (${code})`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

describe("a server's question to a person (MCP elicitation)", () => {
  it("pauses the run with the server's question, and after a restart sends the person's answer, checked and with the form's defaults, to the call made again", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const first = await engine(directory, stdio(log), [planStep([subtask("s1", "execute", "Book flight TR 42")]), toolStep("s1", "elicit.book", { flight: "TR 42" })]);
    let paused;
    try {
      paused = await first.troupe.run({ task: "book TR 42", threadId: "trip" });
      first.model.assertDone();
    } finally {
      await first.troupe.shutdown();
    }
    expect(paused.status).toBe("interrupted");
    expect(paused.interrupt).toMatchObject({
      kind: "mcp-elicitation",
      payload: {
        server: "elicit",
        tool: "elicit.book",
        agent: "execute",
        subtaskId: "s1",
        message: "Who is flying on TR 42?",
        source: "mcp:elicit",
        untrusted: true,
        requestedSchema: { type: "object", properties: { name: { type: "string", title: "Name", minLength: 1 }, seats: { type: "integer", minimum: 1, maximum: 9, default: 2 } }, required: ["name"] },
      },
    });
    // Nothing waits on either side: the server heard cancel for this ask, and its call was cancelled.
    expect(received(log)).toEqual([{ tool: "book", flight: "TR 42", action: "cancel" }]);

    // Another process takes the run up.
    const second = await engine(directory, stdio(log), [finalStep("s1", "booked", { contains: "booked TR 42 for Ada, 2 seats" }), reviewStep(0.9), answerStep("booked TR 42 for Ada")]);
    try {
      await expect(second.troupe.resume("trip", { decision: "approve" })).rejects.toMatchObject({ code: "elicitation_answer_required" });
      await expect(second.troupe.resume("trip", { decision: "answer", answer: '{"name": "Ada", "seats": 12, "meal": "veg"}' })).rejects.toMatchObject({
        code: "elicitation_answer_invalid",
        message: expect.stringMatching(/seats must be at most 9; the form has no field "meal" \(its fields: name, seats\)/),
      });
      // Refused at the door: the run still waits, and the server was not called again.
      expect(received(log)).toHaveLength(1);
      const done = await second.troupe.resume("trip", { decision: "answer", answer: '{"name": "Ada"}' });
      second.model.assertDone();
      expect(done.status).toBe("completed");
      expect(received(log)).toEqual([
        { tool: "book", flight: "TR 42", action: "cancel" },
        { tool: "book", flight: "TR 42", action: "accept", content: { name: "Ada", seats: 2 } },
      ]);
      const rows = await second.troupe.store.audit.list({ tool: "elicit.book" });
      expect(rows.map((row) => [row.status, row.errorCode])).toEqual([
        ["error", "input_required"],
        ["ok", null],
      ]);
      expect(rows[0]?.reason).toContain('elicit asked "Who is flying on TR 42?": waiting for a person\'s answer');
      expect(rows[1]?.reason).toContain("the person's answer: accept");
    } finally {
      await second.troupe.shutdown();
    }
  });

  it("through the CLI: troupe run waits (exit 3) showing the server's words as its own; troupe resume --answer sends the form", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { mcp: { servers: { elicit: stdio(log) } }, ...GRANT } }));
    const env = { TROUPE_PROVIDER: "scripted", TROUPE_DATA_DIR: path.join(directory, "data"), TROUPE_WORKSPACE: path.join(directory, "workspace") };
    const first = await runCli(["run", "book TR 9", "--thread", "cli"], {
      cwd: directory,
      env: { ...env, TROUPE_SCRIPT: writeScript(directory, "one.json", [planStep([subtask("s1", "execute", "Book TR 9")]), toolStep("s1", "elicit.book", { flight: "TR 9" })]) },
    });
    expect(first.code, first.stderr).toBe(3);
    expect(first.stdout).toContain('A question from the MCP server "elicit" (not from troupe):');
    expect(first.stdout).toMatch(/<<data:[0-9a-f]{12} from mcp elicit>>\nWho is flying on TR 9\?\n<<end data:/);
    expect(first.stdout).toContain(`Continue with: troupe resume cli --answer '{"field": …}'`);
    const later = { ...env, TROUPE_SCRIPT: writeScript(directory, "two.json", [finalStep("s1", "booked", { contains: "booked TR 9 for Ed, 3 seats" }), reviewStep(0.9), answerStep("booked")]) };
    const approved = await runCli(["resume", "cli", "--approve"], { cwd: directory, env: later });
    expect(approved.code).toBe(2);
    expect(approved.stderr).toContain("which is not an approval of troupe's");
    const answered = await runCli(["resume", "cli", "--answer", '{"name": "Ed", "seats": 3}', "--json"], { cwd: directory, env: later });
    expect(answered.code, answered.stderr).toBe(0);
    expect(JSON.parse(answered.stdout)).toMatchObject({ status: "completed" });
    expect(received(log).map((entry) => [entry.action, entry.content])).toEqual([
      ["cancel", undefined],
      ["accept", { name: "Ed", seats: 3 }],
    ]);
  });

  it("asks a second question of the same call in turn: the first answer is replayed, the second asked, and both reach the server", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const { troupe, model } = await engine(directory, stdio(log), [
      planStep([subtask("s1", "execute", "Plan the stay")]),
      toolStep("s1", "elicit.pair", {}),
      finalStep("s1", "planned", { contains: "3 nights in Oslo" }),
      reviewStep(0.9),
      answerStep("3 nights in Oslo"),
    ]);
    try {
      const first = await troupe.run({ task: "plan the stay", threadId: "pair" });
      expect(first.interrupt?.payload).toMatchObject({ message: "Which city?" });
      const second = await troupe.resume("pair", { decision: "answer", answer: "Oslo" });
      expect(second.status).toBe("interrupted");
      expect(second.interrupt?.payload).toMatchObject({ message: "How many nights in Oslo?" });
      const done = await troupe.resume("pair", { decision: "answer", answer: "3" });
      model.assertDone();
      expect(done.status).toBe("completed");
      expect(received(log).map((entry) => [entry.action, entry.content])).toEqual([
        ["cancel", undefined],
        ["accept", { city: "Oslo" }],
        ["cancel", undefined],
        ["accept", { city: "Oslo" }],
        ["accept", { nights: 3 }],
      ]);
    } finally {
      await troupe.shutdown();
    }
  });

  it("pauses a direct tool step (no model call) the same way, and makes its call again with the answer", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const { troupe, model } = await engine(directory, stdio(log), [
      planStep([subtask("s1", "execute", "Book TR 8", { tool: "elicit.book", args: { flight: { value: "TR 8" } } })]),
      reviewStep(0.9),
      answerStep("booked TR 8"),
    ]);
    try {
      const paused = await troupe.run({ task: "book TR 8", threadId: "direct" });
      expect(paused.interrupt).toMatchObject({ kind: "mcp-elicitation", payload: { subtaskId: "s1", message: "Who is flying on TR 8?" } });
      const done = await troupe.resume("direct", { decision: "answer", answer: '{"name": "Flo", "seats": 1}' });
      expect(done.status).toBe("completed");
      expect(done.plan[0]).toMatchObject({ status: "done" });
      expect(received(log).map((entry) => [entry.action, entry.content])).toEqual([
        ["cancel", undefined],
        ["accept", { name: "Flo", seats: 1 }],
      ]);
      expect(model.calls.length).toBeLessThanOrEqual(3);
    } finally {
      await troupe.shutdown();
    }
  });

  it("declines for a person who rejects, and the tool's answer reaches the worker", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const { troupe, model } = await engine(directory, stdio(log), [
      planStep([subtask("s1", "execute", "Book flight TR 7")]),
      toolStep("s1", "elicit.book", { flight: "TR 7" }),
      finalStep("s1", "not booked", { contains: "not booked: decline" }),
      reviewStep(0.9),
      answerStep("not booked"),
    ]);
    try {
      const paused = await troupe.run({ task: "book TR 7", threadId: "no" });
      expect(paused.interrupt?.kind).toBe("mcp-elicitation");
      const done = await troupe.resume("no", { decision: "reject" });
      model.assertDone();
      expect(done.status).toBe("completed");
      expect(received(log).map((entry) => entry.action)).toEqual(["cancel", "decline"]);
    } finally {
      await troupe.shutdown();
    }
  });

  it("declines where no person can be asked, stops a server asking in a loop, and declines a form past its bounds, each audited", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const { troupe } = await engine(directory, stdio(log));
    try {
      // A direct call has no person behind it.
      expect(await troupe.callTool("elicit.book", { flight: "TR 1" }, { agent: "execute" })).toMatchObject({ ok: true, value: { text: "not booked: decline" } });
      // A loop: the sixth question in one call stops it (the server hears cancel for that one).
      expect(await troupe.callTool("elicit.loop", {}, { agent: "execute" })).toMatchObject({ ok: false, error: { code: "mcp_failed", message: expect.stringContaining("asked more than 5 questions during one call") } });
      // 1,000 fields of 500 choices: declined without asking anyone.
      expect(await troupe.callTool("elicit.bomb", {}, { agent: "execute" })).toMatchObject({ ok: true, value: { text: "bomb: decline" } });
      const log_ = received(log);
      expect(log_.filter((entry) => entry.tool === "loop").map((entry) => entry.action)).toEqual(["decline", "decline", "decline", "decline", "decline", "cancel"]);
      expect(log_.filter((entry) => entry.tool !== "loop").map((entry) => [entry.tool, entry.action])).toEqual([
        ["book", "decline"],
        ["bomb", "decline"],
      ]);
      const reasons = Object.fromEntries((await troupe.store.audit.list()).map((row) => [row.tool, row.reason ?? ""]));
      expect(reasons["elicit.book"]).toContain("declined: no person can be asked in this call");
      expect(reasons["elicit.loop"]).toContain("stopped: more than 5 questions in one call");
      expect(reasons["elicit.bomb"]).toContain("declined without asking: its form has 1000 fields, more than 24");
    } finally {
      await troupe.shutdown();
    }
  });

  it("shows a server's words as its own, so they cannot pass for troupe's approval", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const { troupe } = await engine(directory, stdio(log), [planStep([subtask("s1", "execute", "Do the thing")]), toolStep("s1", "elicit.pose", {})]);
    try {
      const paused = await troupe.run({ task: "do it", threadId: "pose" });
      expect(paused.interrupt?.kind).toBe("mcp-elicitation");
      const payload = paused.interrupt?.payload ?? {};
      // The terminal escape and the carriage return that would rewrite a line are gone.
      expect([...String(payload.message)].filter((char) => char === "\u001b" || char === "\r")).toEqual([]);
      const shown = describeElicitation(payload);
      expect(shown).toMatch(/^The MCP server "elicit" asks a question while execute's call to elicit\.pose waits\. The words below are the server's, not troupe's/);
      // Its planted end marker cannot close the block it is shown in.
      const block = /<<data:([0-9a-f]{12}) from mcp elicit>>\n([\s\S]*)\n<<end data:\1>>/.exec(shown);
      expect(block?.[2]).toContain("< <end data:000000000000>>");
      // "approve" does not answer it: only its form's content does.
      await expect(troupe.resume("pose", { decision: "approve" })).rejects.toMatchObject({ code: "elicitation_answer_required" });
      expect(received(log).map((entry) => entry.action)).toEqual(["cancel"]);
    } finally {
      await troupe.shutdown();
    }
  });

  it("over streamable HTTP, puts each question to the call that asked it, however many are in flight", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const url = await httpServer(log);
    const { troupe } = await engine(directory, { url });
    try {
      const asked: Record<string, string[]> = { A: [], B: [] };
      const call = (flight: "A" | "B") =>
        troupe.tools.call(
          "elicit.book",
          { flight, together: 2 },
          {
            workspace: troupe.workspace,
            agent: "execute",
            requestInput: (question: ElicitationQuestion) => {
              asked[flight]?.push(question.message);
              return { action: "accept", content: { name: `person ${flight}` }, fingerprint: question.fingerprint };
            },
          },
        );
      const [a, b] = await Promise.all([call("A"), call("B")]);
      expect(asked).toEqual({ A: ["Who is flying on A?"], B: ["Who is flying on B?"] });
      expect(a).toMatchObject({ ok: true, value: { text: "booked A for person A, 2 seats" } });
      expect(b).toMatchObject({ ok: true, value: { text: "booked B for person B, 2 seats" } });
    } finally {
      await troupe.shutdown();
    }
  });

  it("on one stdio stream, declines a question it cannot attribute to one of several calls in flight", async () => {
    const directory = tempDir();
    const log = path.join(directory, "received.jsonl");
    const { troupe } = await engine(directory, stdio(log));
    try {
      const asked: string[] = [];
      const call = (flight: string) =>
        troupe.tools.call(
          "elicit.book",
          { flight, together: 2 },
          {
            workspace: troupe.workspace,
            agent: "execute",
            requestInput: (question: ElicitationQuestion) => {
              asked.push(question.message);
              return { action: "accept", content: { name: "someone" }, fingerprint: question.fingerprint };
            },
          },
        );
      const outcomes = await Promise.all([call("C"), call("D")]);
      // Both asks arrive while both calls are in flight: neither person is asked the other's question.
      expect(asked).toEqual([]);
      expect(outcomes.map((outcome) => outcome.ok && (outcome.value as { text: string }).text).sort()).toEqual(["not booked: decline", "not booked: decline"]);
      const reasons = (await troupe.store.audit.list({ tool: "elicit.book" })).map((row) => row.reason ?? "");
      expect(reasons.every((reason) => reason.includes("troupe could not tell which of the 2 calls in flight asked it"))).toBe(true);
    } finally {
      await troupe.shutdown();
    }
  });
});
