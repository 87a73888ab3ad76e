import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { SessionEventStore } from "./mcp-event-store.js";

const note = (n: number): JSONRPCMessage => ({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: `line ${n}` } });

async function replayed(store: SessionEventStore, lastEventId: string): Promise<{ stream: string; sent: Array<[string, JSONRPCMessage]> }> {
  const sent: Array<[string, JSONRPCMessage]> = [];
  const stream = await store.replayEventsAfter(lastEventId, { send: async (id, message) => void sent.push([id, message]) });
  return { stream, sent };
}

describe("the session's event store (resumable Streamable HTTP)", () => {
  it("replays what came after an id on that id's stream only, without the empty priming event", async () => {
    const store = new SessionEventStore();
    const priming = await store.storeEvent("call-1", {} as JSONRPCMessage);
    const first = await store.storeEvent("call-1", note(1));
    await store.storeEvent("standalone", note(99));
    const second = await store.storeEvent("call-1", note(2));
    expect(await store.getStreamIdForEventId(first)).toBe("call-1");
    const fromPriming = await replayed(store, priming);
    expect(fromPriming.stream).toBe("call-1");
    expect(fromPriming.sent).toEqual([
      [first, note(1)],
      [second, note(2)],
    ]);
    expect((await replayed(store, second)).sent).toEqual([]);
  });

  it("knows no forged id, and no id of another session", async () => {
    const mine = new SessionEventStore();
    const theirs = new SessionEventStore();
    const id = await theirs.storeEvent("call", note(1));
    await mine.storeEvent("call", note(2));
    const [tag] = id.split(".");
    for (const forged of [id, `${tag}.2`, "1", "999999", "-1", "call::0", "", "x".repeat(10_000)]) {
      expect(mine.has(forged)).toBe(false);
      expect(await mine.getStreamIdForEventId(forged)).toBeUndefined();
      await expect(replayed(mine, forged)).rejects.toThrow(/is not kept in this session/);
    }
    expect(theirs.has(id)).toBe(true);
  });

  it("stays within its bounds, oldest first, so a kept id always has everything after it", async () => {
    const store = new SessionEventStore({ maxEvents: 10, maxBytes: 100_000 });
    const ids: string[] = [];
    for (let n = 0; n < 1_000; n += 1) ids.push(await store.storeEvent(n % 2 === 0 ? "a" : "b", note(n)));
    expect(store.size.events).toBe(10);
    // An ancient id is unknown; the oldest kept one replays the rest of its stream in full.
    expect(store.has(ids[0] as string)).toBe(false);
    const oldest = ids[990] as string;
    const { sent } = await replayed(store, oldest);
    expect(sent.map(([, message]) => (message as unknown as { params: { data: string } }).params.data)).toEqual(["line 992", "line 994", "line 996", "line 998"]);

    const bytes = new SessionEventStore({ maxEvents: 1_000, maxBytes: 2_000 });
    for (let n = 0; n < 200; n += 1) await bytes.storeEvent("a", note(n));
    expect(bytes.size.bytes).toBeLessThanOrEqual(2_000);
    expect(bytes.size.events).toBeGreaterThan(0);
  });

  it("a message too large to keep makes its stream's earlier ids unknown: a replay is refused, never served with a hole", async () => {
    const store = new SessionEventStore({ maxEvents: 100, maxBytes: 1_000 });
    const before = await store.storeEvent("call", note(1));
    const other = await store.storeEvent("standalone", note(2));
    const huge = await store.storeEvent("call", { jsonrpc: "2.0", id: 1, result: { text: "x".repeat(5_000) } });
    const after = await store.storeEvent("call", note(3));
    expect(store.has(before)).toBe(false);
    expect(store.has(huge)).toBe(false);
    expect(store.has(other)).toBe(true);
    expect((await replayed(store, after)).sent).toEqual([]);
  });
});
