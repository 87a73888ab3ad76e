import { describe, expect, it } from "vitest";
import { envelope, makeApp, type TestApp, waitForStatus } from "../server-helpers.js";
import type { SqliteStore } from "../../src/store/index.js";

const keys = { apiKeys: "alice:key-alice-123,bob:key-bob-456" };
const alice = { authorization: "Bearer key-alice-123" };
const bob = { authorization: "Bearer key-bob-456" };

interface MemoryView {
  id: string;
  text: string;
  subject: string | null;
  source_run: string | null;
  score?: number;
}

async function run(app: TestApp, headers: Record<string, string>, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const accepted = await app.app.inject({ method: "POST", url: "/api/v1/execute", headers, payload: body });
  expect(accepted.statusCode).toBe(202);
  const { task_id } = envelope<{ task_id: string }>(accepted).data;
  return waitForStatus(app, task_id, ["completed", "failed", "interrupted", "cancelled"], headers);
}

describe("long-term memory over HTTP", () => {
  it("keeps one key's memories from another: list, search, get, delete, tool calls and runs", async () => {
    const app = await makeApp({ config: keys });
    const saved = await app.app.inject({ method: "POST", url: "/api/v1/memory", headers: alice, payload: { text: "the launch code is 0451", subject: "the launch code" } });
    expect(saved.statusCode).toBe(201);
    const { memory } = envelope<{ memory: MemoryView; created: boolean }>(saved).data;
    expect(memory).toMatchObject({ text: "the launch code is 0451", subject: "the launch code", source_run: null });
    // A task of alice's remembers another fact, in alice's memory.
    const remembered = await run(app, alice, { task: "remember that the capital of Atlantis is Poseidonia" });
    expect(remembered.status).toBe("completed");

    const mine = envelope<{ total: number; items: MemoryView[] }>(await app.app.inject({ method: "GET", url: "/api/v1/memory", headers: alice })).data;
    expect(mine.total).toBe(2);
    expect(mine.items.find((item) => item.text.includes("Atlantis"))?.source_run).toBe(remembered.task_id);

    // Bob sees none of it, whatever he asks.
    expect(envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/memory", headers: bob })).data.total).toBe(0);
    expect(envelope<{ items: unknown[] }>(await app.app.inject({ method: "GET", url: "/api/v1/memory?query=launch%20code", headers: bob })).data.items).toEqual([]);
    for (const method of ["GET", "DELETE"] as const) {
      const response = await app.app.inject({ method, url: `/api/v1/memory/${memory.id}`, headers: bob });
      expect([method, response.statusCode, envelope(response).code]).toEqual([method, 404, "memory_not_found"]);
    }
    const called = await app.app.inject({ method: "POST", url: "/api/v1/tools/call", headers: bob, payload: { tool_name: "memory_search", parameters: { query: "launch code" } } });
    expect(envelope<{ result: { items: unknown[] } }>(called).data.result.items).toEqual([]);
    // Bob's run cannot recall alice's fact: the question needs a language model.
    const bobAsks = await run(app, bob, { task: "What is the capital of Atlantis?" });
    expect(bobAsks.status).toBe("failed");
    expect((bobAsks.memories as { items: unknown[] }).items).toEqual([]);
    const aliceAsks = await run(app, alice, { task: "What is the capital of Atlantis?" });
    expect(aliceAsks.status).toBe("completed");
    expect((aliceAsks.result as { answer: string }).answer).toContain("Poseidonia");
    expect(aliceAsks.memories).toMatchObject({ retrieval: "lexical", items: [expect.objectContaining({ text: "the capital of Atlantis is Poseidonia" })] });

    // Alice searches, reads, and forgets hers.
    const found = envelope<{ items: MemoryView[]; retrieval: string }>(await app.app.inject({ method: "GET", url: "/api/v1/memory?query=what%20is%20the%20launch%20code", headers: alice })).data;
    expect([found.retrieval, found.items[0]?.id]).toEqual(["lexical", memory.id]);
    expect((await app.app.inject({ method: "GET", url: `/api/v1/memory/${memory.id}`, headers: alice })).statusCode).toBe(200);
    const gone = await app.app.inject({ method: "DELETE", url: `/api/v1/memory/${memory.id}`, headers: alice });
    expect(envelope(gone).data).toEqual({ id: memory.id, forgotten: true });
    expect((await app.app.inject({ method: "GET", url: `/api/v1/memory/${memory.id}`, headers: alice })).statusCode).toBe(404);
  });

  it("continues a thread's conversation, shows it with the task, and keeps another key's thread of the same name apart", async () => {
    const app = await makeApp({ config: keys });
    const first = await run(app, alice, { task: "compute 2+3", thread_id: "talk" });
    expect(first.status).toBe("completed");
    const second = await run(app, alice, { task: "save it to mem.txt", thread_id: "talk" });
    expect(second.status).toBe("completed");
    expect(second.conversation).toEqual([{ task_id: first.task_id, task: "compute 2+3", status: "completed", answer: expect.stringContaining("5"), answer_format: "text" }]);
    const listed = envelope<{ items: Array<{ task_id: string }>; total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/tasks?thread_id=talk", headers: alice })).data;
    expect(listed.items.map((item) => item.task_id)).toEqual([second.task_id, first.task_id]);
    expect(envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/tasks?thread_id=talk", headers: bob })).data.total).toBe(0);
    // Bob's "talk" is his own thread: alice's turns are not his conversation (main answered 404 here).
    const bobs = await run(app, bob, { task: "compute 7+1", thread_id: "talk" });
    expect(bobs.conversation).toEqual([]);
    expect(envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/tasks?thread_id=talk", headers: alice })).data.total).toBe(2);
    const badBudget = await app.app.inject({ method: "POST", url: "/api/v1/execute", headers: alice, payload: { task: "double it", thread_id: "talk", history_budget: -1 } });
    expect([badBudget.statusCode, envelope(badBudget).code]).toEqual([400, "history_budget_out_of_range"]);
  });

  it("refuses bad input with clear codes, and caps a key's memory (409 memory_full) even under concurrent writes", async () => {
    const app = await makeApp({ config: keys, troupe: { config: { memory: { maxItems: 5, maxItemBytes: 1_000 } } } });
    const post = (payload: unknown, headers = alice) => app.app.inject({ method: "POST", url: "/api/v1/memory", headers: { ...headers, "content-type": "application/json" }, payload: typeof payload === "string" ? payload : JSON.stringify(payload) });
    const cases: Array<[unknown, number, string]> = [
      [{}, 400, "text_required"],
      [{ text: "" }, 400, "text_empty"],
      [{ text: "   " }, 400, "invalid_memory"],
      [{ text: "x".repeat(70_000) }, 400, "text_too_long"],
      [{ text: "é".repeat(600) }, 400, "memory_item_too_large"],
      [{ text: "fine", colour: "blue" }, 400, "unknown_field"],
      [{ text: "fine", ttl_seconds: 0 }, 400, "ttl_seconds_out_of_range"],
      [{ text: 42 }, 400, "text_invalid"],
      ['{"text": "unterminated', 400, "invalid_json"],
    ];
    for (const [payload, status, code] of cases) {
      const response = await post(payload);
      expect([JSON.stringify(payload).slice(0, 40), response.statusCode, envelope(response).code]).toEqual([JSON.stringify(payload).slice(0, 40), status, code]);
    }
    for (const url of ["/api/v1/memory/not-an-id", "/api/v1/memory/m-zzzzzzzzzzzz", "/api/v1/memory?limit=0", "/api/v1/memory?query=", "/api/v1/memory?colour=blue"]) {
      const response = await app.app.inject({ method: "GET", url, headers: alice });
      expect([url, response.statusCode]).toEqual([url, 400]);
    }
    const writes = await Promise.all(Array.from({ length: 12 }, (_, index) => post({ text: `fact number ${index}` })));
    expect(writes.filter((response) => response.statusCode === 201)).toHaveLength(5);
    const refused = writes.filter((response) => response.statusCode !== 201);
    expect(refused.map((response) => [response.statusCode, envelope(response).code])).toEqual(Array.from({ length: 7 }, () => [409, "memory_full"]));
    // The cap is per key: bob still has room; an update of alice's is not a new fact.
    expect((await post({ text: "bob's own fact" }, bob)).statusCode).toBe(201);
    const first = envelope<{ items: MemoryView[] }>(await app.app.inject({ method: "GET", url: "/api/v1/memory?limit=1", headers: alice })).data.items[0];
    expect(first).toBeDefined();
    expect(envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/memory", headers: alice })).data.total).toBe(5);
  });

  it("answers a damaged store with a clear error, and stays up", async () => {
    const app = await makeApp({ config: keys });
    await app.app.inject({ method: "POST", url: "/api/v1/memory", headers: alice, payload: { text: "a fact" } });
    (app.troupe.store as SqliteStore).db.exec("DROP TABLE memory_fts");
    const search = await app.app.inject({ method: "GET", url: "/api/v1/memory?query=fact", headers: alice });
    expect([search.statusCode, envelope(search).code]).toEqual([500, "memory_store_missing"]);
    // A run whose memory cannot be read says so in its trace, and still runs.
    const ran = await run(app, alice, { task: "compute 2+2" });
    expect(ran.status).toBe("completed");
    expect((ran.memories as { error?: string }).error).toMatch(/no such table: memory_fts/);
    expect((await app.app.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);
  });
});
