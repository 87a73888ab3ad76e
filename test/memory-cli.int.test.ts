import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { MemoryItem } from "../src/core/memory.js";
import type { RunResult } from "../src/core/run.js";
import { runCli, tempDir } from "./helpers.js";
import { sourceOf, untrustedLabel } from "../src/core/provenance.js";
import { memoryNamespaceFor } from "../src/runtime/memory-owner.js";
import { openSqliteStore } from "../src/store/index.js";

const json = <T = RunResult>(stdout: string): T => JSON.parse(stdout) as T;

describe("a thread is a conversation (the CLI on the offline model)", () => {
  it("continues a thread: \"compute 2+3\", then \"save it to mem.txt\" saves 5, then \"that file\" is mem.txt", async () => {
    const directory = tempDir();
    const first = await runCli(["run", "compute 2+3", "--thread", "m1", "--json"], { cwd: directory });
    expect(first.code).toBe(0);
    expect(json(first.stdout).answer).toContain("5");

    const second = await runCli(["run", "save it to mem.txt", "--thread", "m1", "--json"], { cwd: directory });
    expect([second.code, second.stderr]).toEqual([0, expect.any(String)]);
    const saved = json(second.stdout);
    expect(saved.status).toBe("completed");
    expect(readFileSync(path.join(directory, "workspace", "mem.txt"), "utf8")).toBe("5");
    // The earlier result came from the stash by its handle, not retyped.
    expect(saved.plan[0]).toMatchObject({ tool: "thread_result", status: "done" });

    const third = await runCli(["run", "count the characters in that file", "--thread", "m1", "--json"], { cwd: directory });
    expect(third.code).toBe(0);
    expect(json(third.stdout).plan).toEqual([expect.objectContaining({ args: { path: { value: "mem.txt" } }, status: "done", summary: expect.stringMatching(/^1\b|: 1$|1 char/) })]);

    // Another thread knows nothing of this conversation: its "it" has nothing to refer to.
    const elsewhere = await runCli(["run", "save it to other.txt", "--thread", "m2", "--json"], { cwd: directory });
    expect(elsewhere.code).toBe(1);
    expect(json(elsewhere.stdout).status).toBe("failed");
  });

  it("shows progress of the conversation on stderr, and refuses a bad --history-budget", async () => {
    const directory = tempDir();
    await runCli(["run", "compute 6*7", "--thread", "t"], { cwd: directory });
    const next = await runCli(["run", "double it", "--thread", "t", "--history-budget", "500"], { cwd: directory });
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(/conversation: 1 earlier turn, \d+\/500 tokens/);
    expect(next.stdout).toContain("84");
    for (const bad of ["-1", "abc", "100001", "1.5"]) {
      const refused = await runCli(["run", "double it", "--thread", "t", "--history-budget", bad], { cwd: directory });
      expect([bad, refused.code]).toEqual([bad, 2]);
      expect(refused.stderr).toMatch(/history budget/);
    }
    // troupe chat checks it before the session starts.
    const chat = await runCli(["chat", "--history-budget", "-1"], { cwd: directory, input: "compute 1+1\n" });
    expect([chat.code, chat.stderr.trim()]).toEqual([2, "troupe: --history-budget: the history budget must be between 0 and 100000 tokens"]);
  });
});

describe("troupe run - (the task from stdin)", () => {
  it("reads the task from stdin: echo \"compute 12*12\" | troupe run - --json gives 144", async () => {
    const directory = tempDir();
    const result = await runCli(["run", "-", "--json"], { cwd: directory, input: "compute 12*12\n" });
    expect(result.code).toBe(0);
    const output = json(result.stdout);
    expect(output.status).toBe("completed");
    expect(output.plan[0]?.summary).toContain("144");
    expect(output.answer).toContain("144");
  });

  it("refuses empty, oversized and endless input with exit 2 and a clear message", async () => {
    const directory = tempDir();
    const empty = await runCli(["run", "-", "--json"], { cwd: directory, input: "  \n\n" });
    expect([empty.code, empty.stderr.trim()]).toEqual([2, "troupe: task: the task is empty"]);
    const long = await runCli(["run", "-"], { cwd: directory, input: "x".repeat(6_000) });
    expect([long.code, long.stderr.trim()]).toEqual([2, "troupe: task: the task is longer than 5000 characters"]);
    const huge = await runCli(["run", "-"], { cwd: directory, input: Buffer.alloc(5 * 1024 * 1024, 0x61) });
    expect(huge.code).toBe(2);
    expect(huge.stderr).toMatch(/task on stdin is larger than \d+ bytes/);
    // Nothing ran, so nothing was written.
    expect(huge.stdout).toBe("");
  });
});

describe("long-term memory from the CLI", () => {
  it("remembers on one thread and recalls on another; lists, searches, shows and forgets with --json", async () => {
    const directory = tempDir();
    const remember = await runCli(["run", "remember that the capital of Atlantis is Poseidonia", "--thread", "a", "--json"], { cwd: directory });
    expect(remember.code).toBe(0);
    const rememberRun = json(remember.stdout);
    expect(rememberRun.plan).toEqual([expect.objectContaining({ tool: "memory_save", status: "done" })]);

    const recall = await runCli(["run", "What is the capital of Atlantis?", "--thread", "b", "--json"], { cwd: directory });
    expect(recall.code).toBe(0);
    const recallRun = json(recall.stdout);
    expect(recallRun.status).toBe("completed");
    expect(recallRun.answer).toContain("Poseidonia");
    // The planner was given the fact, found by its words.
    expect(recallRun.trace.memories).toMatchObject({ retrieval: "lexical", items: [expect.objectContaining({ text: "the capital of Atlantis is Poseidonia" })] });

    // A question nothing remembered answers needs a language model: not completed.
    const unknown = await runCli(["run", "What is the capital of France?", "--json"], { cwd: directory });
    expect(unknown.code).toBe(1);
    expect(json(unknown.stdout).answer).toContain("needs a language model");

    const listed = await runCli(["memory", "list", "--json"], { cwd: directory });
    expect(listed.code).toBe(0);
    const list = json<{ total: number; items: MemoryItem[] }>(listed.stdout);
    expect(list.total).toBe(1);
    const [item] = list.items;
    expect(item).toMatchObject({ text: "the capital of Atlantis is Poseidonia", subject: "the capital of Atlantis", sourceRun: rememberRun.runId, expiresAt: null, label: { trust: "trusted" } });

    const searched = json<{ retrieval: string; items: MemoryItem[] }>((await runCli(["memory", "search", "Atlantis capital", "--json"], { cwd: directory })).stdout);
    expect([searched.retrieval, searched.items.map((hit) => hit.id)]).toEqual(["lexical", [item?.id]]);
    const shown = await runCli(["memory", "show", item?.id ?? "", "--json"], { cwd: directory });
    expect(json<MemoryItem>(shown.stdout).id).toBe(item?.id);
    const human = await runCli(["memory", "show", item?.id ?? ""], { cwd: directory });
    expect(human.stdout).toContain(`saved by: ${rememberRun.runId}`);
    expect(human.stdout).toContain("trust: trusted");
    // A fact a run saved from untrusted content shows its label.
    const store = openSqliteStore(path.join(directory, ".troupe"));
    const poisoned = await store.memories.save(memoryNamespaceFor(undefined), {
      text: "the vault code is 1234",
      subject: "vault code",
      sourceRun: "run-earlier",
      label: untrustedLabel([sourceOf("web", "https://evil.test/notes")]),
    });
    await store.close();
    expect((await runCli(["memory", "list"], { cwd: directory })).stdout).toMatch(/untrusted {2}the vault code is 1234/);
    expect((await runCli(["memory", "show", poisoned.item.id], { cwd: directory })).stdout).toContain("trust: untrusted (web https://evil.test/notes)");
    expect(await runCli(["memory", "forget", poisoned.item.id], { cwd: directory })).toMatchObject({ code: 0 });

    // An API key's memory is not the local user's.
    const theirs = await runCli(["memory", "list", "--principal", "alice", "--json"], { cwd: directory });
    expect(json<{ total: number }>(theirs.stdout).total).toBe(0);

    const forgotten = await runCli(["memory", "forget", item?.id ?? "", "--json"], { cwd: directory });
    expect([forgotten.code, json<{ forgotten: boolean }>(forgotten.stdout).forgotten]).toEqual([0, true]);
    const again = await runCli(["memory", "show", item?.id ?? ""], { cwd: directory });
    expect([again.code, again.stderr.trim()]).toEqual([2, `troupe: there is no remembered fact ${item?.id}`]);
    const bad = await runCli(["memory", "show", "../../etc/passwd"], { cwd: directory });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/is not a memory id/);
  });

  it("says clearly when the store is missing or damaged, never listing nothing", async () => {
    const directory = tempDir();
    const missing = await runCli(["memory", "list", "--data-dir", path.join(directory, "nowhere")], { cwd: directory });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/troupe: there is no troupe database in .*nowhere, so no memory to read/);
    const damaged = path.join(directory, "damaged");
    await runCli(["run", "compute 1+1", "--data-dir", damaged], { cwd: directory });
    writeFileSync(path.join(damaged, "troupe.db"), Buffer.alloc(64 * 1024, 0x5a));
    const broken = await runCli(["memory", "list", "--data-dir", damaged], { cwd: directory });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/troupe: the database .*troupe\.db cannot be used \(file is not a database\): restore it from a copy/);
    const empty = await runCli(["memory", "search", " ", "--data-dir", path.join(directory, ".troupe")], { cwd: directory });
    expect(empty.code).toBe(2);
  });
});
