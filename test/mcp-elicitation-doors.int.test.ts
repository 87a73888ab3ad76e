import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { TaskState, type Task } from "@a2a-js/sdk";
import { chromium } from "playwright-core";
import { describe, expect, it } from "vitest";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { ROOT } from "./helpers.js";
import { a2aClient, a2aMessage, listen, mcpClient, sendRequest, statusText, structured } from "./protocol-helpers.js";
import { answerExpiredQuestions } from "../src/server/expired-questions.js";
import { envelope, makeApp, waitForStatus } from "./server-helpers.js";
import { PATIENCE_MS } from "./wait.js";

// A tool server's question reaches a person through every door troupe has, as its own kind of
// question (never an approval): the HTTP API, the web console, troupe's own MCP server (relayed to
// the host as the server's form) and A2A (input-required). On main none of this existed: the
// server's question got "Method not found".

const FIXTURE = path.join(ROOT, "test/fixtures/mcp-elicit-server.mjs");
const CHROMIUM = "/usr/bin/chromium";

function received(log: string): Array<{ action: string; content?: Record<string, unknown> }> {
  try {
    return readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as { action: string });
  } catch {
    return [];
  }
}

async function appWithServer(flight: string, server: Record<string, unknown> = {}, outcome = `booked ${flight} for`) {
  const steps = [
    planStep([subtask("s1", "execute", `Book flight ${flight}`)]),
    toolStep("s1", "elicit.book", { flight }),
    finalStep("s1", "booked", { contains: outcome }),
    reviewStep(0.9),
    answerStep(`booked ${flight}`),
  ];
  const directory = (await import("./helpers.js")).tempDir();
  const log = path.join(directory, "received.jsonl");
  const app = await makeApp({
    steps,
    toolsConfig: {
      mcp: { servers: { elicit: { command: process.execPath, args: [FIXTURE], env: { ELICIT_LOG: log }, ...server } } },
      permissions: { grants: [{ agent: "execute", tool: "elicit.*", level: "EXECUTE", grantedBy: "test" }] },
    },
  });
  return { app, log };
}

describe("a tool server's question, through troupe's front doors", () => {
  it("over the HTTP API: shown as mcp-elicitation with the server's form, answered with content checked in the request", async () => {
    const { app, log } = await appWithServer("TR 1");
    const accepted = envelope(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "book TR 1" } })).data;
    const task = await waitForStatus(app, accepted.task_id as string, ["interrupted"]);
    expect(task.interrupt).toMatchObject({ kind: "mcp-elicitation", payload: { server: "elicit", message: "Who is flying on TR 1?", untrusted: true, requestedSchema: { required: ["name"] } } });
    const resume = (payload: Record<string, unknown>) => app.app.inject({ method: "POST", url: `/api/v1/tasks/${accepted.task_id}/resume`, payload });
    const approve = await resume({ decision: "approve" });
    expect(approve.statusCode).toBe(400);
    expect(envelope(approve).code).toBe("elicitation_answer_required");
    const wrong = await resume({ decision: "answer", content: { seats: 0 } });
    expect(wrong.statusCode).toBe(400);
    expect(envelope(wrong)).toMatchObject({ code: "elicitation_answer_invalid", message: expect.stringContaining("seats must be at least 1; name is required") });
    expect((await app.troupe.store.runs.get(accepted.task_id as string))?.status).toBe("interrupted");
    expect((await resume({ decision: "answer", content: { name: "Ada" } })).statusCode).toBe(202);
    await waitForStatus(app, accepted.task_id as string, ["completed"]);
    expect(received(log)).toEqual([
      { tool: "book", flight: "TR 1", action: "cancel" },
      { tool: "book", flight: "TR 1", action: "accept", content: { name: "Ada", seats: 2 } },
    ]);
  });

  it("through troupe's own MCP server: the host is asked the server's form, inside troupe's words saying whose it is", async () => {
    const { app, log } = await appWithServer("TR 2");
    const asked: Array<{ message: string; requestedSchema: unknown }> = [];
    const client = await mcpClient(await listen(app), {
      elicit: (request) => {
        asked.push(request);
        return { action: "accept", content: { name: "Bo" } };
      },
    });
    const outcome = structured<{ status: string }>(await client.callTool({ name: "run_task", arguments: { task: "book TR 2" } }));
    expect(outcome.status).toBe("completed");
    expect(asked).toHaveLength(1);
    expect(asked[0]?.message).toMatch(/^The MCP server "elicit" asks a question while execute's call to elicit\.book waits\. The words below are the server's, not troupe's/);
    expect(asked[0]?.requestedSchema).toMatchObject({ type: "object", properties: { name: { type: "string" }, seats: { type: "integer", default: 2 } }, required: ["name"] });
    expect(received(log).map((entry) => [entry.action, entry.content])).toEqual([
      ["cancel", undefined],
      ["accept", { name: "Bo", seats: 2 }],
    ]);
    await client.close();
  });

  it("over A2A: input-required with the question in words and as data; a data part with the form's fields answers it", async () => {
    const { app, log } = await appWithServer("TR 3");
    const client = await a2aClient(await listen(app));
    const waiting = (await client.sendMessage(sendRequest(a2aMessage("book TR 3")))) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(waiting)).toContain("The words below are the server's, not troupe's");
    const done = (await client.sendMessage(sendRequest(a2aMessage("", { taskId: waiting.id, contextId: waiting.contextId, data: { name: "Cy" } })))) as Task;
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(received(log).at(-1)).toMatchObject({ action: "accept", content: { name: "Cy", seats: 2 } });
  });

  it("answers cancel for a person who did not answer within elicitation.timeoutMs, and the run goes on", async () => {
    const { app, log } = await appWithServer("TR 5", { elicitation: { timeoutMs: 60_000 } }, "not booked: cancel");
    const accepted = envelope(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "book TR 5" } })).data;
    const task = await waitForStatus(app, accepted.task_id as string, ["interrupted"]);
    const expiresAt = (task.interrupt as { payload: { expiresAt: number; askedAt: number } }).payload.expiresAt;
    expect(expiresAt - (task.interrupt as { payload: { askedAt: number } }).payload.askedAt).toBe(60_000);
    // Before its time nothing is answered; past it, troupe serve's look (once a minute) answers it.
    expect(await answerExpiredQuestions(app.troupe, expiresAt - 1)).toBe(0);
    expect(await answerExpiredQuestions(app.troupe, expiresAt)).toBe(1);
    await waitForStatus(app, accepted.task_id as string, ["completed"]);
    expect(received(log).map((entry) => entry.action)).toEqual(["cancel", "cancel"]);
  });

  it("in the web console: its own card, the server's words as text, a form built from its fields", async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install it with apt-get install chromium`);
    const { app, log } = await appWithServer("TR 4");
    const base = await listen(app);
    const accepted = envelope(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "book TR 4" } })).data;
    await waitForStatus(app, accepted.task_id as string, ["interrupted"]);
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
    try {
      const page = await browser.newPage();
      // Playwright's own 30 s default is a clock; the waits here are on states, with the suite's one patience as their net.
      page.setDefaultTimeout(PATIENCE_MS);
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${base}/#/tasks/${accepted.task_id}`);
      await page.waitForSelector(".elicitation");
      expect(await page.textContent("#approval h2")).toBe("A tool server asks you something");
      expect(await page.textContent(".elicitation h3")).toBe('The MCP server "elicit" asks a question');
      expect(await page.textContent(".elicitation blockquote")).toBe("Who is flying on TR 4?");
      // Not an approval: no Approve button, and the default is filled in.
      expect(await page.locator("#approval button", { hasText: "Approve" }).count()).toBe(0);
      expect(await page.inputValue('.elicitation input[name="seats"]')).toBe("2");
      await page.fill('.elicitation input[name="name"]', "Di");
      await page.click("#send-form");
      await waitForStatus(app, accepted.task_id as string, ["completed"]);
      expect(received(log).at(-1)).toMatchObject({ action: "accept", content: { name: "Di", seats: 2 } });
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
