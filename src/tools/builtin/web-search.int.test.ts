import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolOutcome } from "../define-tool.js";
import { ToolRegistry } from "../registry.js";
import { workspaceRoot } from "../workspace.js";
import { fileReadTool } from "./file-read.js";
import { createWebSearchTool, type WebSearchValue } from "./web-search.js";

let base: string;
let knowledge: string;
let workspace: string;
let server: Server;
let origin = "";
const requests: Array<{ path: string; headers: IncomingMessage["headers"]; body: string }> = [];

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "troupe-search-"));
  knowledge = path.join(base, "knowledge");
  workspace = path.join(base, "workspace");
  mkdirSync(path.join(knowledge, "guides"), { recursive: true });
  mkdirSync(workspace);
  writeFileSync(path.join(knowledge, "guides", "sqlite.md"), "# SQLite write-ahead logging\n\nWAL mode lets readers continue while a writer appends to the log. Checkpoints move pages back.");
  writeFileSync(path.join(knowledge, "langgraph.md"), "# LangGraph interrupts\n\nA node calls interrupt() to pause; resume with a Command.");
  writeFileSync(path.join(knowledge, "image.png"), "not text");
  writeFileSync(path.join(workspace, "notes.txt"), "Meeting notes: the SQLite checkpointer keeps threads durable.");
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      requests.push({ path: request.url ?? "", headers: request.headers, body });
      response.setHeader("content-type", "application/json");
      if (request.url === "/search" && request.method === "POST") {
        response.end(JSON.stringify({ query: JSON.parse(body).query, results: [{ title: "Tavily hit", url: "https://a.example/t", content: "from tavily", score: 0.9 }] }));
      } else if (request.url?.startsWith("/res/v1/web/search")) {
        response.end(JSON.stringify({ web: { results: [{ title: "Brave hit", url: "https://b.example/b", description: "from brave" }] } }));
      } else if (request.url?.startsWith("/searx/search")) {
        response.end(JSON.stringify({ results: [{ title: "SearXNG hit", url: "https://c.example/s", content: "from searxng", score: 2 }] }));
      } else {
        response.statusCode = 500;
        response.end("{}");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  server.close();
  await rm(base, { recursive: true, force: true });
});

const search = (registry: ToolRegistry, args: Record<string, unknown>): Promise<ToolOutcome> => registry.call("web_search", args, { workspace });
const valueOf = (outcome: ToolOutcome): WebSearchValue => {
  expect(outcome.ok).toBe(true);
  return (outcome as { value: WebSearchValue }).value;
};

describe("web_search offline", () => {
  it("finds text in the knowledge folder and the workspace, with titles, paths and snippets", async () => {
    const registry = new ToolRegistry().register(createWebSearchTool({ knowledge: [knowledge] }) as never);
    const found = valueOf(await search(registry, { query: "SQLite checkpointer" }));
    expect(found.provider).toBe("local");
    const first = found.results[0];
    expect(found.results.map((hit) => `${hit.source}:${hit.path}`).sort()).toEqual(["knowledge:guides/sqlite.md", "workspace:notes.txt"]);
    expect(first?.snippet.length).toBeGreaterThan(10);
    const guide = found.results.find((hit) => hit.path === "guides/sqlite.md");
    expect(guide).toMatchObject({ title: "SQLite write-ahead logging", snippet: expect.stringContaining("SQLite write-ahead logging") });
    expect(valueOf(await search(registry, { query: "interrupt resume" })).results[0]).toMatchObject({ title: "LangGraph interrupts", path: "langgraph.md" });
    expect(valueOf(await search(registry, { query: "zebra quantum" })).results).toEqual([]);
  });

  it("sees files added after the first search", async () => {
    const registry = new ToolRegistry().register(createWebSearchTool({ knowledge: [knowledge] }) as never);
    expect(valueOf(await search(registry, { query: "kubernetes" })).results).toEqual([]);
    writeFileSync(path.join(workspace, "k8s.md"), "# Kubernetes rollout\n\nA rolling update replaces pods gradually.");
    expect(valueOf(await search(registry, { query: "kubernetes" })).results[0]).toMatchObject({ title: "Kubernetes rollout", source: "workspace" });
  });

  it("says clearly when an online provider is asked for but not configured", async () => {
    const registry = new ToolRegistry().register(createWebSearchTool({ knowledge: [knowledge] }) as never);
    expect(await search(registry, { query: "x", provider: "tavily" })).toMatchObject({ ok: false, error: { code: "provider_not_configured" } });
  });
});

describe("web_search under a symlink and FIFO swap race", () => {
  it("never returns outside content and never hangs, and file_read works after it", async () => {
    const raceWorkspace = await workspaceRoot(path.join(base, "race-ws"));
    const outside = path.join(base, "race-outside");
    mkdirSync(outside);
    writeFileSync(path.join(outside, "secret.txt"), "# Secret\n\nzebracorn outside-secret-7f3a");
    writeFileSync(path.join(raceWorkspace, "steady.md"), "# Steady\n\nzebracorn inside, always here.");
    // A separate process swaps swap.txt between a file, a symlink to outside and a FIFO, as fast as it can.
    const swapper = spawn(
      "python3",
      [
        "-c",
        `import os, sys, time
ws, secret = sys.argv[1], sys.argv[2]
target, temporary = ws + "/swap.txt", ws + "/.swap.tmp"
print("ready", flush=True)
while True:
    try:
        with open(temporary, "w") as handle:
            handle.write("# Ordinary\\n\\nzebracorn ordinary text")
        os.rename(temporary, target)
        time.sleep(0.001)
        os.unlink(target)
        os.symlink(secret, target)
        time.sleep(0.001)
        os.unlink(target)
        os.mkfifo(target)
        time.sleep(0.001)
    except OSError:
        pass`,
        raceWorkspace,
        path.join(outside, "secret.txt"),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise((resolve) => swapper.stdout.once("data", resolve));
    // A short tool timeout: a search stuck on a FIFO shows as a timeout, not as a test that never ends.
    const registry = new ToolRegistry().register(createWebSearchTool({ knowledge: [], timeoutMs: 2_000 }) as never).register(fileReadTool as never);
    const failures: string[] = [];
    let ordinary = 0;
    try {
      // At least 100 rounds, and on until a search has met the ordinary file (at most 500).
      for (let round = 0; round < 500 && (round < 100 || ordinary === 0); round += 1) {
        const outcomes = await Promise.all([1, 2, 3].map(() => registry.call("web_search", { query: "zebracorn", maxResults: 10 }, { workspace: raceWorkspace })));
        for (const outcome of outcomes) {
          if (!outcome.ok) {
            failures.push(outcome.error.code);
            continue;
          }
          const hits = (outcome.value as WebSearchValue).results;
          expect(JSON.stringify(hits)).not.toContain("outside-secret");
          expect(hits.map((hit) => hit.path)).toContain("steady.md");
          if (hits.some((hit) => hit.path === "swap.txt")) ordinary += 1;
        }
      }
    } finally {
      swapper.kill("SIGKILL");
    }
    expect(failures).toEqual([]);
    // The race really ran: some searches met swap.txt as an ordinary file.
    expect(ordinary).toBeGreaterThan(0);
    expect(await registry.call("file_read", { path: "steady.md" }, { workspace: raceWorkspace })).toMatchObject({ ok: true, value: { content: "# Steady\n\nzebracorn inside, always here." } });
  });
});

describe("web_search online providers (fake servers speaking their APIs)", () => {
  it("uses Tavily when its key is configured, sending the key and the query", async () => {
    const registry = new ToolRegistry().register(createWebSearchTool({ knowledge: [knowledge], tavilyApiKey: "tvly-test", tavilyUrl: origin }) as never);
    const found = valueOf(await search(registry, { query: "troupe agents", maxResults: 3 }));
    expect(found).toMatchObject({ provider: "tavily", results: [{ title: "Tavily hit", url: "https://a.example/t", snippet: "from tavily", source: "tavily" }] });
    const sent = requests.find((request) => request.path === "/search");
    expect(sent?.headers.authorization).toBe("Bearer tvly-test");
    expect(JSON.parse(sent?.body ?? "{}")).toMatchObject({ query: "troupe agents", max_results: 3 });
    // local stays available on request
    expect(valueOf(await search(registry, { query: "SQLite", provider: "local" })).provider).toBe("local");
  });

  it("uses Brave and SearXNG", async () => {
    const brave = new ToolRegistry().register(createWebSearchTool({ braveApiKey: "brave-key", braveUrl: origin }) as never);
    expect(valueOf(await search(brave, { query: "q1" }))).toMatchObject({ provider: "brave", results: [{ title: "Brave hit", snippet: "from brave" }] });
    expect(requests.find((request) => request.path.startsWith("/res/v1/web/search?q=q1"))?.headers["x-subscription-token"]).toBe("brave-key");
    const searx = new ToolRegistry().register(createWebSearchTool({ searxngUrl: `${origin}/searx` }) as never);
    expect(valueOf(await search(searx, { query: "q2" }))).toMatchObject({ provider: "searxng", results: [{ title: "SearXNG hit", url: "https://c.example/s" }] });
    expect(requests.some((request) => request.path === "/searx/search?q=q2&format=json")).toBe(true);
  });
});
