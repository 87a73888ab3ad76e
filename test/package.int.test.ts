import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docBlocks, expectAsDocumented, runDocument } from "./doc-commands.js";
import { ROOT, tempDir } from "./helpers.js";
import { installTarball, oldNode, packTroupe, userEnv } from "./package-helpers.js";
import { mcpClient, structured } from "./protocol-helpers.js";

/**
 * troupe as a user installs it: `npm pack`, then `npm install` of the tarball into an empty
 * folder (its path has spaces), and everything the README promises from there — run,
 * serve (the console, the API, /mcp, the agent card), mcp, the library snippet, the tour and the
 * CLI examples — and a clear refusal on an old Node.js.
 */
let tarball = "";
let app = "";
let packageDirectory = "";

let root = "";

beforeAll(() => {
  // Kept for the whole file (tempDir's folders go after each test).
  root = mkdtempSync(path.join(tmpdir(), "troupe-package-"));
  tarball = packTroupe(path.join(root, "packed"));
  // Spaces in the path (a quote too breaks the source build of better-sqlite3 12, which
  // @langchain/langgraph-checkpoint-sqlite brings, when its prebuilt binary cannot be fetched).
  app = path.join(root, "a user folder", "my app");
  installTarball(tarball, app);
  packageDirectory = path.join(app, "node_modules", "troupe");
}, 1_800_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
}, 600_000);

/** A new folder of the user's with the app's node_modules (the installed package) linked in. */
function userFolder(name: string): string {
  const folder = path.join(tempDir("troupe-package-"), name);
  mkdirSync(folder, { recursive: true });
  symlinkSync(path.join(app, "node_modules"), path.join(folder, "node_modules"));
  return folder;
}

describe("the npm package", () => {
  it("ships the built code, the console's files and the migrations, and no sources, tests or source maps", () => {
    const listing = spawnSync("tar", ["-tzf", tarball], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
    expect(listing).toEqual(expect.arrayContaining(["package/bin/troupe.js", "package/dist/src/cli/main.js", "package/dist/src/index.d.ts", "package/dist/src/web/index.html", "package/dist/src/web/task-page.js", "package/dist/src/web/task/store.js", "package/dist/src/web/task/approval.js", "package/dist/src/web/style.css"]));
    // Every console file, the task page's modules in their folder too.
    const web = readdirSync(path.join(ROOT, "src/web"), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
    expect(web.map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)))).toContain(path.join("src", "web", "task", "store.js"));
    expect(listing).toEqual(expect.arrayContaining(web.map((entry) => `package/dist/${path.relative(ROOT, path.join(entry.parentPath, entry.name))}`)));
    expect(listing.filter((file) => file.includes("/store/migrations/sqlite/")).length).toBe(readdirSync(path.join(ROOT, "src/store/migrations/sqlite")).length);
    expect(listing.filter((file) => file.includes("/store/migrations/postgres/")).length).toBe(readdirSync(path.join(ROOT, "src/store/migrations/postgres")).length);
    expect(listing.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))).toEqual([]);
    expect(listing.filter((file) => file.endsWith(".map") || file.includes(".test.") || file.startsWith("package/dist/test/") || file.startsWith("package/dist/bench/"))).toEqual([]);
  });

  it("runs a task from a read-only install: the README's first task, no warning", () => {
    // The install folder cannot be written (bwrap mounts it read-only, as root too): troupe writes only where it runs.
    const command = ["--dev-bind", "/", "/", "--ro-bind", packageDirectory, packageDirectory, path.join(app, "node_modules", ".bin", "troupe"), "run", "compute 17% of 2,340 and save it to result.txt"];
    const result = spawnSync("bwrap", command, { cwd: app, env: userEnv(), encoding: "utf8", timeout: 300_000 });
    expect(result.stderr).not.toMatch(/warn|deprecat|error/i);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("397.8");
    expect(readFileSync(path.join(app, "workspace", "result.txt"), "utf8")).toBe("397.8");
  });

  it("serves the console, the API, /mcp and the agent card", async () => {
    const folder = tempDir("troupe-package-serve-");
    const child = spawn(path.join(app, "node_modules", ".bin", "troupe"), ["serve", "--port", "0"], { cwd: folder, env: userEnv(), stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    let failed: Error | undefined;
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", (error) => (failed = error));
    try {
      let base = "";
      while (!base) {
        base = /listening on (http:\/\/\S+) /.exec(stderr)?.[1] ?? "";
        if (failed || child.exitCode !== null) throw new Error(`troupe serve did not start: ${failed?.message ?? stderr}`);
        if (!base) await sleep(50);
      }
      // The console: its page, its scripts, and the browser libraries it loads from their packages.
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("<title>troupe console</title>");
      for (const file of ["/app.js", "/task-page.js", "/task/store.js", "/task/approval.js", "/style.css", "/vendor/marked.js", "/vendor/purify.js"]) expect([file, (await fetch(`${base}${file}`)).status]).toEqual([file, 200]);
      // The API: a task accepted, then completed.
      const accepted = await fetch(`${base}/api/v1/execute`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ task: "compute 17% of 2,340 and save it to result.txt" }) });
      expect(accepted.status).toBe(202);
      const taskId = ((await accepted.json()) as { data: { task_id: string } }).data.task_id;
      let status = "";
      while (!["completed", "failed", "cancelled"].includes(status)) {
        status = ((await (await fetch(`${base}/api/v1/tasks/${taskId}`)).json()) as { data: { status: string } }).data.status;
        if (child.exitCode !== null) throw new Error(`troupe serve exited: ${stderr}`);
        if (status !== "completed") await sleep(100);
      }
      expect(status).toBe("completed");
      expect(readFileSync(path.join(folder, "workspace", "result.txt"), "utf8")).toBe("397.8");
      // MCP over Streamable HTTP, with the SDK's own client.
      const mcp = await mcpClient(base);
      try {
        expect((await mcp.listTools()).tools.map((tool) => tool.name)).toContain("run_task");
      } finally {
        await mcp.close();
      }
      // A2A: the agent card, as the SDK's resolver reads it.
      const card = await new DefaultAgentCardResolver().resolve(base);
      expect(card.name).toBe("troupe");
      expect(stderr).not.toMatch(/warn|deprecat/i);
    } finally {
      if (child.exitCode === null && !failed) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
    }
  });

  it("serves MCP on stdio to an MCP host", async () => {
    const folder = tempDir("troupe-package-mcp-");
    const transport = new StdioClientTransport({ command: path.join(app, "node_modules", ".bin", "troupe"), args: ["mcp"], cwd: folder, env: userEnv(), stderr: "pipe" });
    const client = new Client({ name: "package-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const outcome = structured<{ status: string; answer: string }>(await client.callTool({ name: "run_task", arguments: { task: "compute 2^10" } }));
      expect(outcome.status).toBe("completed");
      expect(outcome.answer).toContain("1024");
    } finally {
      await client.close();
    }
  });

  it("runs the README's library snippet as written", () => {
    const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
    const snippet = /\*\*7\. Use it as a library\.\*\*\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(snippet).toContain('from "troupe"');
    const folder = userFolder("lib user");
    writeFileSync(path.join(folder, "snippet.mjs"), snippet ?? "");
    const result = spawnSync(process.execPath, ["snippet.mjs"], { cwd: folder, env: userEnv(), encoding: "utf8", timeout: 120_000 });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("397.8");
    expect(readFileSync(path.join(folder, "workspace", "result.txt"), "utf8")).toBe("397.8");
  });

  it("refuses an old Node.js in one line, before anything loads or is written", () => {
    const old = oldNode();
    const folder = tempDir("troupe-package-old-");
    // Started with the old node directly, and as npx would start it: `troupe` on a PATH whose node is the old one.
    const direct = spawnSync(old, [path.join(packageDirectory, "bin", "troupe.js"), "run", "compute 1+1"], { cwd: folder, env: userEnv(), encoding: "utf8" });
    const viaPath = spawnSync(path.join(app, "node_modules", ".bin", "troupe"), ["run", "compute 1+1"], { cwd: folder, env: { ...userEnv(), PATH: `${path.dirname(old)}:/usr/bin:/bin` }, encoding: "utf8" });
    for (const result of [direct, viaPath]) {
      expect(result.status).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(/^troupe: needs Node\.js 22 or newer; this is Node\.js \d+\.\d+\.\d+ \(.+\): install a newer Node\.js \(https:\/\/nodejs\.org\) and run it again\n$/);
    }
    expect(existsSync(path.join(folder, ".troupe"))).toBe(false);
    expect(existsSync(path.join(folder, "workspace"))).toBe(false);
  });

  it("runs the README's tour and docs/cli.md's examples from the installed package", { timeout: 1_200_000 }, async () => {
    const folder = userFolder("the tour");
    // The tour's eval suite comes from the repository, as a reader of the README gets it.
    cpSync(path.join(ROOT, "examples", "evals"), path.join(folder, "examples", "evals"), { recursive: true });
    expectAsDocumented(await runDocument(docBlocks(path.join(ROOT, "README.md"), "## A five-minute tour"), folder, userEnv()));
    expectAsDocumented(await runDocument(docBlocks(path.join(ROOT, "docs", "cli.md")), userFolder("the cli"), userEnv()));
  });
});
