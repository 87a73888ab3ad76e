import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { openStore, type Store } from "../store/index.js";
import type { AuditSink } from "./audit.js";
import { defineTool } from "./define-tool.js";
import { ToolRegistry } from "./registry.js";

const made: string[] = [];
const stores: Store[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) void store.close();
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A tool with an effect outside the workspace that nothing can check (a payment, a message sent). */
function sender(sent: string[]) {
  return defineTool({
    name: "send",
    description: "sends a message",
    schema: z.object({ text: z.string() }),
    permission: "NONE",
    powers: ["network.send"],
    idempotent: false,
    timeoutMs: 1_000,
    async execute({ text }) {
      sent.push(text);
      return `sent ${text}`;
    },
  });
}

describe("a call whose outcome cannot be known after a crash waits for a person", () => {
  it("asks whether to run it again: approved, it runs once more; rejected, it stays failed; with no one to ask, it fails", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-unknown-"));
    made.push(directory);
    const store = await openStore(path.join(directory, "data"));
    stores.push(store);
    const sent: string[] = [];
    // The first process: its row committed as started, then it died before the tool ran or returned.
    const dying: AuditSink = { record: (entry) => store.audit.record(entry), begin: (entry, effect) => store.audit.begin(entry, effect), complete: () => Promise.reject(new Error("died")), findCall: (id) => store.audit.findCall(id) };
    const first = new ToolRegistry({ audit: dying }).register(sender(sent));
    const context = (callId: string) => ({ workspace: directory, runId: "run-1", agent: "execute", callId });
    await first.call("send", { text: "a" }, context("c1"));
    await first.call("send", { text: "b" }, context("c2"));
    await first.call("send", { text: "c" }, context("c3"));
    expect(sent).toEqual(["a", "b", "c"]);
    const live = new ToolRegistry({ audit: store.audit }).register(sender(sent));
    const asked: string[] = [];
    const approved = await live.call("send", { text: "a" }, { ...context("c1"), requestApproval: (request) => (asked.push(request.reason), { approved: true }) });
    expect(approved).toMatchObject({ ok: true, value: "sent a" });
    expect(asked[0]).toMatch(/^send began before troupe stopped \(audit row \d+\) and whether it had its effect cannot be told from the workspace: approve to run it again, reject to leave it failed$/);
    const rejected = await live.call("send", { text: "b" }, { ...context("c2"), requestApproval: () => ({ approved: false, feedback: "it went out" }) });
    expect(rejected).toMatchObject({ ok: false, error: { code: "outcome_unknown", message: expect.stringMatching(/a person chose not to run it again: it went out$/) } });
    expect(await live.call("send", { text: "c" }, context("c3"))).toMatchObject({ ok: false, error: { code: "outcome_unknown" } });
    expect(sent).toEqual(["a", "b", "c", "a"]);
    const rows = await store.audit.list({ runId: "run-1" });
    expect(rows.map((row) => [row.callId, row.decision, row.status])).toEqual([
      ["c1", "approved", "ok"],
      ["c2", "rejected", "error"],
      ["c3", "allowed", "error"],
    ]);
  });
});
