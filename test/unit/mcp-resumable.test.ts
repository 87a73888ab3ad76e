import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { listen, mcpClient, structured } from "../protocol-helpers.js";
import { makeApp } from "../server-helpers.js";

const README_TASK = "compute 17% of 2,340 and save it to result.txt";

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
});

/** What a client sends on a session it holds, by hand: JSON-RPC over POST, as 2025-11-25 (streams start with a priming event). */
function headersFor(sessionId: string, key?: string): Record<string, string> {
  return {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-session-id": sessionId,
    "mcp-protocol-version": "2025-11-25",
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  };
}

/** The SSE events of a finished stream: id, retry and data of each. */
function eventsOf(text: string): Array<{ id?: string; retry?: string; data: string }> {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const fields = new Map(block.split("\n").map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()] as const));
      return { id: fields.get("id"), retry: fields.get("retry"), data: fields.get("data") ?? "" };
    })
    .filter((event) => event.id !== undefined || event.data !== "");
}

async function ping(base: string, sessionId: string, key?: string): Promise<Array<{ id?: string; retry?: string; data: string }>> {
  const response = await fetch(`${base}/mcp`, { method: "POST", headers: headersFor(sessionId, key), body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" }) });
  expect(response.status).toBe(200);
  return eventsOf(await response.text());
}

function sessionOf(client: Client): string {
  return (client.transport as StreamableHTTPClientTransport).sessionId as string;
}

describe("resumable Streamable HTTP: event ids, retry, replay after a reconnect", () => {
  it("a client whose stream drops mid-call reconnects with Last-Event-ID and gets every progress line and the result", async () => {
    const app = await makeApp();
    const base = await listen(app);
    // The same call on an unbroken stream, for what the client should hear.
    const steady = await mcpClient(base);
    clients.push(steady);
    const heard: string[] = [];
    await steady.callTool({ name: "run_task", arguments: { task: README_TASK } }, undefined, { onprogress: (step) => void heard.push(step.message ?? "") });

    let cut = false;
    const reconnects: string[] = [];
    const dropping = (async (input: string | URL | Request, init: RequestInit = {}) => {
      if (init.method === "GET") reconnects.push(new Headers(init.headers).get("last-event-id") ?? "");
      if (cut || init.method !== "POST" || !String(init.body).includes('"run_task"')) return fetch(input, init);
      cut = true;
      // The connection is lost after the priming event and one message: the server sees it close.
      const connection = new AbortController();
      const response = await fetch(input, { ...init, signal: connection.signal });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let seen = "";
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (eventsOf(seen).length >= 2) {
            connection.abort();
            controller.error(new Error("connection lost"));
            return;
          }
          const { value, done } = await reader.read();
          if (done) return controller.close();
          seen += decoder.decode(value, { stream: true });
          controller.enqueue(value);
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    }) as typeof fetch;
    const client = new Client({ name: "dropping", version: "1" });
    clients.push(client);
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { fetch: dropping }));
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = await client.callTool({ name: "run_task", arguments: { task: README_TASK } }, undefined, { onprogress: (step) => void progress.push(step) });
    expect(cut).toBe(true);
    expect(reconnects.filter((id) => id !== "").length).toBeGreaterThanOrEqual(1);
    expect(structured<{ status: string; answer: string }>(result)).toMatchObject({ status: "completed", answer: expect.stringContaining("397.8") });
    // Nothing lost, nothing twice (the second run overwrites the file the first made).
    expect(progress.map((step) => step.message)).toEqual(heard.map((line) => line.replace(", new file)", ")")));
    expect(progress.map((step) => step.progress)).toEqual(heard.map((_, index) => index + 1));
  });

  it("numbers every event, primes each stream with an id and retry, and refuses an id it does not keep: forged, ancient, another session's or key's", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:alice-key,bob:bob-key" } });
    const base = await listen(app);
    const alice = await mcpClient(base, { key: "alice-key" });
    const bob = await mcpClient(base, { key: "bob-key" });
    clients.push(alice, bob);
    const events = await ping(base, sessionOf(alice), "alice-key");
    expect(events[0]).toMatchObject({ id: expect.stringMatching(/^[0-9a-f]{12}\.\d+$/), retry: "1000", data: "" });
    expect(events[1]).toMatchObject({ id: expect.any(String), data: expect.stringContaining('"id":7') });
    const aliceId = events[0]?.id as string;

    const reconnect = (sessionId: string, key: string, lastEventId: string) =>
      fetch(`${base}/mcp`, { method: "GET", headers: { ...headersFor(sessionId, key), accept: "text/event-stream", "last-event-id": lastEventId } });
    // Alice's own id: the rest of that stream (the ping's answer), then the stream stays open for what comes.
    const resumed = await reconnect(sessionOf(alice), "alice-key", aliceId);
    expect(resumed.status).toBe(200);
    const reader = (resumed.body as ReadableStream<Uint8Array>).getReader();
    let replayed = "";
    while (!replayed.includes('"id":7')) replayed += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();

    for (const [sessionId, key, lastEventId] of [
      [sessionOf(bob), "bob-key", aliceId], // another key's
      [sessionOf(alice), "alice-key", "999999"], // forged
      [sessionOf(alice), "alice-key", `${aliceId.split(".")[0]}.999999`], // not yet sent
      [sessionOf(alice), "alice-key", "x".repeat(4_000)],
    ] as const) {
      const refused = await reconnect(sessionId, key, lastEventId);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/is not an event this session keeps/);
    }
    // Another session of the same key does not know it either.
    const second = await mcpClient(base, { key: "alice-key" });
    clients.push(second);
    expect((await reconnect(sessionOf(second), "alice-key", aliceId)).status).toBe(400);
    // Alice's session id with Bob's key is not found at all.
    expect((await reconnect(sessionOf(alice), "bob-key", aliceId)).status).toBe(404);

    // A flood of requests: the session keeps its last 2,000 events, so the first id grows too old to resume from.
    for (let round = 0; round < 11; round += 1) await Promise.all(Array.from({ length: 100 }, () => ping(base, sessionOf(alice), "alice-key")));
    expect((await reconnect(sessionOf(alice), "alice-key", aliceId)).status).toBe(400);
    expect(await alice.ping()).toEqual({});
  });
});
