import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { createLogger } from "../src/server/app.js";
import { type RunningServer, startServer } from "../src/server/serve.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { ROOT, tempDir } from "./helpers.js";
import { PATIENCE_MS } from "./wait.js";

const CHROMIUM = "/usr/bin/chromium";

describe("the console shows collaboration", () => {
  it("lists the board's messages and the review panel's votes on the task page", async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install it with apt-get install chromium`);
    const reviewer = (index: number, scores: number, fields: Record<string, unknown> = {}): ScriptStep => ({ ...reviewStep(scores, fields), contains: `You are reviewer ${index} of 2 on a panel.` });
    const model = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "research", "Find the code word and post it for s2", { tools: ["board_post"] }), subtask("s2", "execute", "Report the code word from the board", { tools: ["board_read"] })]),
        toolStep("s1", "board_post", { to: "s2", text: "the code word is <b>heron</b>" }),
        finalStep("s1", "posted", { contains: '"ok":true' }),
        toolStep("s2", "board_read", {}, { delayMs: 200 }),
        finalStep("s2", "heron", { contains: "heron" }),
        reviewer(1, 0.9),
        reviewer(2, 0.8),
        answerStep("The code word is heron."),
      ],
    });
    const directory = tempDir("troupe-console-");
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    let server: RunningServer | undefined;
    const browser = await chromium.launchPersistentContext(path.join(directory, "profile"), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1200, height: 900 },
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    // Playwright's own 30 s default is a clock; the waits here are on states, with the suite's one patience as their net.
    browser.setDefaultTimeout(PATIENCE_MS);
    try {
      server = await startServer({ troupe, config: { port: 0, rateLimitPerMinute: 0 }, logger: createLogger("warn") });
      const response = await fetch(`${server.url}/api/v1/execute`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ task: "pass the code word", reviewers: 2 }) });
      const id = ((await response.json()) as { data: { task_id: string } }).data.task_id;
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${server.url}/#/tasks/${id}`);
      await page.waitForSelector('#task-status [data-status="completed"]');
      await page.waitForSelector('#board li[data-id="s1.1.1"]');
      // The message as text, never as markup.
      expect(await page.textContent('#board li[data-id="s1.1.1"]')).toContain("s1 (research) → s2: the code word is <b>heron</b>");
      expect(await page.locator("#board b").count()).toBe(1);
      const verdict = await page.textContent('#timeline li[data-type="critic-verdict"]');
      expect(verdict).toContain("panel: reviewer-1 pass, reviewer-2 pass → decided pass (consensus 1 ≥ 0.6)");
      // Its agent's own tools and the one the plan named.
      expect(await page.textContent('#timeline li[data-type="tools-offer"]')).toMatch(/offered \d+ of \d+ tools \(planned\): .*board_(post|read) — named by the plan/);
      mkdirSync(path.join(ROOT, "artifacts"), { recursive: true });
      await page.screenshot({ path: path.join(ROOT, "artifacts", "console-board-panel.png"), fullPage: true });
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
      if (server) await server.shutdown("test done");
      else troupe.close();
    }
  });
});
