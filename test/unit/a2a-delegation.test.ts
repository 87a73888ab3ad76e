import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, questionStep, reviewStep, subtask } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { tempDir } from "../helpers.js";
import { WORKER_TASK } from "../provider-helpers.js";
import { listen } from "../protocol-helpers.js";
import { makeApp, type TestApp, waitFor } from "../server-helpers.js";

const opened: Troupe[] = [];
afterEach(async () => {
  for (const troupe of opened.splice(0)) await troupe.shutdown();
});

/** A troupe server to delegate to (offline, or scripted), listening on loopback. */
async function remote(steps?: ScriptStep[], toolsConfig?: unknown): Promise<{ app: TestApp; card: string }> {
  const app = await makeApp({ ...(steps ? { steps } : {}), ...(toolsConfig ? { toolsConfig } : {}) });
  return { app, card: `${await listen(app)}/.well-known/agent-card.json` };
}

/** A delegating troupe whose config declares the remote agent `helper`, loopback allowed by the network guard. */
async function delegator(agent: Record<string, unknown>, steps: ScriptStep[], options: { allow?: boolean; budget?: Record<string, number>; fetch?: Record<string, unknown> } = {}) {
  const directory = tempDir();
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    config: { agents: [{ name: "helper", ...agent } as never], ...(options.budget ? { budget: options.budget } : {}) },
    toolsConfig: { fetch: { allowAddresses: options.allow === false ? [] : ["127.0.0.1/32"], ...options.fetch } },
  });
  opened.push(troupe);
  return { troupe, model, workspace: path.join(directory, "workspace") };
}

const helperStep = (label: string, fields = {}) => subtask("r1", "helper", label, fields);
/** Bytes no text round trip keeps by accident: CRLF, a tab, trailing spaces, a BOM, multibyte and a NUL. */
const TRICKY = "\uFEFFhéllo wörld\r\n\tindented  \u0000 end  \n";

describe("remote A2A agents as workers", () => {
  it("the planner sees a remote agent's skills as capabilities; its subtask goes as an A2A message and the file it wrote comes back byte for byte", async () => {
    const b = await remote([planStep([subtask("s1", "execute", "Write it", { tool: "file_write", args: { path: { value: "tricky.txt" }, content: { value: TRICKY } } })]), reviewStep(1), answerStep("wrote tricky.txt")]);
    const { troupe, model, workspace } = await delegator({ a2a: b.card }, [
      planStep([
        helperStep("write the tricky file"),
        subtask("s2", "execute", "Keep a copy", { tool: "file_write", dependsOn: ["r1"], args: { path: { value: "copy.txt" }, content: { ref: "r1", path: "$.files[0].content" } } }),
      ]),
      reviewStep(1),
      answerStep("copied"),
    ]);
    const helper = troupe.agents.get("helper");
    expect(helper).toMatchObject({ source: "remote", remote: { tool: "a2a.helper" } });
    expect(helper?.capabilities).toEqual(expect.arrayContaining(["compute", "search", "write-code"]));
    const result = await troupe.run({ task: "get the tricky file from the helper" });
    expect(result.status).toBe("completed");
    expect(model.calls.find((call) => call.role === "planner")?.lastMessage).toMatch(/helper/);
    const theirs = readFileSync(path.join(b.app.directory, "workspace", "tricky.txt"));
    expect(theirs.toString()).toBe(TRICKY);
    expect(readFileSync(path.join(workspace, "copy.txt")).equals(theirs)).toBe(true);
    const value = (await troupe.store.stash.get(result.plan[0]?.ref as string)) as { text: string; files: Array<{ name: string; encoding: string; content: string; sha256: string }> };
    expect(value.text).toBe("wrote tricky.txt");
    expect(value.files[0]).toMatchObject({ name: "tricky.txt", encoding: "utf8", content: TRICKY });
    // One message, one remote task, one audit row; the remote's model calls count in this run's metrics.
    expect(await b.app.troupe.store.runs.count({})).toBe(1);
    const audit = (await troupe.store.audit.list()).filter((row) => row.tool === "a2a.helper");
    expect(audit.map((row) => [row.agent, row.decision, row.status])).toEqual([["helper", "allowed", "ok"]]);
    expect(result.metrics.llmCalls).toBe(3 + ((await b.app.troupe.store.runs.list({ limit: 1 }))[0]?.metrics?.llmCalls ?? 0));
  });

  it("a binary file comes back as base64 and is written back exactly", async () => {
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x41, 0xc3, 0x28, 0x0a]);
    const b = await remote([
      planStep([subtask("s1", "execute", "Write bytes", { tool: "file_write", args: { path: { value: "blob.bin" }, content: { value: bytes.toString("base64") }, encoding: { value: "base64" } } })]),
      reviewStep(1),
      answerStep("wrote blob.bin"),
    ]);
    const { troupe, workspace } = await delegator({ a2a: b.card }, [
      planStep([
        helperStep("write the blob"),
        subtask("s2", "execute", "Keep it", { tool: "file_write", dependsOn: ["r1"], args: { path: { value: "blob.bin" }, content: { ref: "r1", path: "$.files[0].content" }, encoding: { value: "base64" } } }),
      ]),
      reviewStep(1),
      answerStep("kept"),
    ]);
    expect((await troupe.run({ task: "get the blob" })).status).toBe("completed");
    expect(readFileSync(path.join(workspace, "blob.bin")).equals(bytes)).toBe(true);
  });

  it("the remote agent's question pauses the run as troupe's own; the person's answer goes back on the same remote task", async () => {
    const b = await remote([questionStep("Which number should I double?"), planStep([subtask("s1", "execute", "Double it", { tool: "calculator", args: { expression: { value: "21*2" } } })]), reviewStep(1), answerStep("42")]);
    const { troupe } = await delegator({ a2a: b.card }, [planStep([helperStep("double a number")]), reviewStep(1), answerStep("the helper says 42")]);
    const paused = await troupe.run({ task: "double a number with the helper" });
    expect(paused).toMatchObject({ status: "interrupted", interrupt: { kind: "question", payload: { agent: "helper", question: "Which number should I double?" } } });
    const resumed = await troupe.resume(paused.threadId, { decision: "answer", answer: "21" });
    expect(resumed.status).toBe("completed");
    expect(await troupe.store.stash.get(resumed.plan[0]?.ref as string)).toBe("42");
    // The answer went on the same task: the remote agent has one run, completed.
    const runs = await b.app.troupe.store.runs.list({});
    expect(runs.map((run) => run.status)).toEqual(["completed"]);
  });

  it("an approval the remote troupe waits for is asked here as troupe's own tool approval, and approve goes back to it", async () => {
    const b = await remote([planStep([subtask("s1", "execute", "Remove old.txt", { tool: "file_delete", args: { path: { value: "old.txt" } } })]), reviewStep(1), answerStep("removed old.txt")], {
      permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] },
    });
    writeFileSync(path.join(b.app.directory, "workspace", "old.txt"), "stale");
    const { troupe } = await delegator({ a2a: b.card }, [planStep([helperStep("remove old.txt")]), reviewStep(1), answerStep("the helper removed it")]);
    const paused = await troupe.run({ task: "have the helper remove old.txt" });
    expect(paused).toMatchObject({ status: "interrupted", interrupt: { kind: "tool-approval", payload: { tool: "a2a.helper", agent: "helper", remoteKind: "tool-approval" } } });
    expect(String((paused.interrupt?.payload as { question: string }).question)).toMatch(/^Approve execute's call to file_delete/);
    await expect(troupe.resume(paused.threadId, { decision: "answer", answer: "sure" })).rejects.toMatchObject({ code: "decision_invalid" });
    const resumed = await troupe.resume(paused.threadId, { decision: "approve" });
    expect(resumed.status).toBe("completed");
    expect(existsSync(path.join(b.app.directory, "workspace", "old.txt"))).toBe(false);
  });

  it("a high-risk remote agent waits for a person before anything is sent; a rejection sends nothing", async () => {
    const b = await remote();
    const { troupe } = await delegator({ a2a: b.card, risk: "high" }, [planStep([helperStep("compute 2+3")]), reviewStep(1), answerStep("nothing")]);
    const paused = await troupe.run({ task: "ask the helper" });
    expect(paused).toMatchObject({ status: "interrupted", interrupt: { kind: "tool-approval", payload: { tool: "a2a.helper", agent: "helper" } } });
    expect(await b.app.troupe.store.runs.count({})).toBe(0);
    const rejected = await troupe.resume(paused.threadId, { decision: "reject", feedback: "not that agent" });
    expect(rejected.plan[0]).toMatchObject({ status: "failed", failureKind: "rejected" });
    expect(await b.app.troupe.store.runs.count({})).toBe(0);
    expect((await troupe.store.audit.list()).filter((row) => row.tool === "a2a.helper").map((row) => row.decision)).toEqual(["rejected"]);
  });

  it("its failure, a cancel on its side and a timeout are the subtask's failures, said plainly; a timed-out task is cancelled at the agent", async () => {
    const failing = await remote([planStep([subtask("s1", "execute", "Try")]), finalStep("s1", "FAILED: the disk is full"), reviewStep(0.2), answerStep("could not")]);
    const first = await delegator({ a2a: failing.card }, [planStep([helperStep("try it")]), reviewStep(0.2), answerStep("it failed")]);
    const failed = await first.troupe.run({ task: "delegate a failing task" });
    expect(failed.status).toBe("failed");
    expect(failed.plan[0]?.error).toMatch(/^remote_failed: the remote agent helper failed task run-/);

    const slow = await remote([planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })], { delayMs: 20_000 })]);
    const second = await delegator({ a2a: slow.card, timeoutMs: 1_000 }, [planStep([helperStep("multiply slowly")]), reviewStep(0.2), answerStep("too slow")]);
    const timedOut = await second.troupe.run({ task: "delegate a slow task" });
    expect(timedOut.plan[0]?.error).toMatch(/^timeout: a2a\.helper did not finish within 1000 ms/);
    await waitFor(async () => ((await slow.app.troupe.store.runs.list({}))[0]?.status === "cancelled" ? true : undefined), "the remote task to be cancelled");

    const cancelled = await remote([planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })], { delayMs: 20_000 })]);
    const third = await delegator({ a2a: cancelled.card }, [planStep([helperStep("multiply slowly")]), reviewStep(0.2), answerStep("cancelled")]);
    const running = third.troupe.run({ task: "delegate a task someone cancels" });
    const remoteRun = await waitFor(async () => (await cancelled.app.troupe.store.runs.list({}))[0], "the remote run");
    await cancelled.app.tasks.cancel({ id: "local" }, remoteRun.id);
    expect((await running).plan[0]?.error).toMatch(/^remote_cancelled: task run-.* of the remote agent helper was cancelled/);
  });

  it("cancelling the delegating task cancels the remote agent's task too", async () => {
    const slow = await remote([planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })], { delayMs: 20_000 })]);
    const local = await makeApp({
      steps: [planStep([helperStep("multiply slowly")])],
      troupe: { config: { agents: [{ name: "helper", a2a: slow.card } as never] } },
      toolsConfig: { fetch: { allowAddresses: ["127.0.0.1/32"] } },
    });
    const submitted = await local.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "delegate a task, then change my mind" } });
    const taskId = (submitted.json() as { data: { task_id: string } }).data.task_id;
    const remoteRun = await waitFor(async () => (await slow.app.troupe.store.runs.list({}))[0], "the remote run");
    const cancelled = await local.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/cancel` });
    expect(cancelled.statusCode).toBe(200);
    await waitFor(async () => ((await slow.app.troupe.store.runs.get(remoteRun.id))?.status === "cancelled" ? true : undefined), "the remote task to be cancelled");
  });

  it("the usage a remote agent reports counts against the run's budget", async () => {
    const b = await remote();
    const { troupe } = await delegator({ a2a: b.card }, [planStep([helperStep(WORKER_TASK)]), reviewStep(1), answerStep("unused")], { budget: { maxModelCalls: 4 } });
    const result = await troupe.run({ task: "delegate within a small budget" });
    expect(result.stopReason).toBe("budget_exhausted");
    expect(result.metrics.llmCalls).toBeGreaterThan(4);
  });

  it("refuses a card that is private (unless allowed), unreachable, or not a card, naming the agent; an optional one is skipped with a warning", async () => {
    const b = await remote();
    await expect(delegator({ a2a: b.card }, [], { allow: false })).rejects.toMatchObject({
      code: "remote_agent_unavailable",
      message: expect.stringMatching(/^the remote agent "helper" \(http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json\) could not be used: refused: 127\.0\.0\.1 is a loopback address \(allow it with tools\.fetch\.allowAddresses\)$/),
    });
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    await expect(delegator({ a2a: `http://127.0.0.1:${closed}/.well-known/agent-card.json` }, [])).rejects.toMatchObject({ code: "remote_agent_unavailable", message: expect.stringMatching(/connection refused/) });
    await expect(delegator({ a2a: b.card.replace("agent-card.json", "no-card.json") }, [])).rejects.toMatchObject({ code: "remote_agent_unavailable", message: expect.stringMatching(/404/) });
    await expect(delegator({ a2a: "http://169.254.169.254/.well-known/agent-card.json" }, [])).rejects.toMatchObject({ message: expect.stringMatching(/refused: 169\.254\.169\.254 is a linkLocal address/) });
    // The same host lists as http_fetch's.
    await expect(delegator({ a2a: b.card }, [], { fetch: { denyHosts: ["127.0.0.1"] } })).rejects.toMatchObject({ message: expect.stringMatching(/127\.0\.0\.1 is on the deny list/) });
    await expect(delegator({ a2a: b.card }, [], { fetch: { allowHosts: ["agents.example.com"] } })).rejects.toMatchObject({ message: expect.stringMatching(/127\.0\.0\.1 is not on the allow list/) });
    const optional = await delegator({ a2a: `http://127.0.0.1:${closed}/.well-known/agent-card.json`, optional: true }, []);
    expect(optional.troupe.agents.get("helper")).toBeUndefined();
    expect(optional.troupe.warnings[0]).toMatch(/the remote agent "helper" .* could not be used: .*connection refused/);
  });
});
