import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { LOCAL_PRINCIPAL } from "../../src/server/config.js";
import { createTroupeMcpServer } from "../../src/server/mcp/mcp-server.js";
import { listen, mcpClient, structured } from "../protocol-helpers.js";
import { makeApp, waitFor, waitForStatus } from "../server-helpers.js";

const README_TASK = "compute 17% of 2,340 and save it to result.txt";

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
});

async function connect(base: string, key?: string): Promise<Client> {
  const client = await mcpClient(base, key ? { key } : {});
  clients.push(client);
  return client;
}

/** A run resting on its plan's approval: nothing moves until someone answers. */
async function waitingRun(client: Client): Promise<string> {
  const outcome = structured<{ run_id: string; status: string }>(await client.callTool({ name: "run_task", arguments: { task: README_TASK, approve_plan: true } }));
  expect(outcome.status).toBe("interrupted");
  return outcome.run_id;
}

describe("MCP resource subscriptions: a run's resources tell their changes as it runs", () => {
  it("sends resources/updated as the run goes, so a client that reads on each sees it reach its end; unsubscribing lets go", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:alice-key,bob:bob-key" } });
    const base = await listen(app);
    const alice = await connect(base, "alice-key");
    expect(alice.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
    const runId = await waitingRun(alice);
    const uri = `troupe://runs/${runId}`;
    const statuses: string[] = [];
    const updated: string[] = [];
    alice.setNotificationHandler(ResourceUpdatedNotificationSchema, async (notification) => {
      updated.push(notification.params.uri);
      if (notification.params.uri !== uri) return;
      const read = await alice.readResource({ uri });
      statuses.push((JSON.parse((read.contents[0] as { text: string }).text) as { status: string }).status);
    });
    await alice.subscribeResource({ uri });
    await alice.subscribeResource({ uri: `${uri}/graph` });
    await alice.subscribeResource({ uri });
    // One listener for the run, whatever the number of its resources followed.
    expect(app.hub.watchers(runId)).toBe(1);

    const resumed = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${runId}/resume`, headers: { authorization: "Bearer alice-key" }, payload: { decision: "approve" } });
    expect(resumed.statusCode).toBe(202);
    await waitForStatus(app, runId, ["completed"], { authorization: "Bearer alice-key" });
    await waitFor(() => (statuses.at(-1) === "completed" ? true : undefined), "a notification after which the run reads completed");
    // The first change (the run starting) is told at once and the later ones at most 200 ms apart, the last always: two at least.
    expect(updated.filter((told) => told === uri).length).toBeGreaterThanOrEqual(2);
    expect(updated).toContain(`${uri}/graph`);

    await alice.unsubscribeResource({ uri: `${uri}/graph` });
    expect(app.hub.watchers(runId)).toBe(1);
    await alice.unsubscribeResource({ uri });
    expect(app.hub.watchers(runId)).toBe(0);
    // Unsubscribing what is not followed is fine.
    await alice.unsubscribeResource({ uri });
    await alice.unsubscribeResource({ uri: "test://watched-resource" });

    // Another key's run is not found, exactly as one that does not exist; so is what troupe does not serve.
    const bob = await connect(base, "bob-key");
    const theirs = await bob.subscribeResource({ uri }).catch((error: { code: number; message: string }) => error);
    const missing = await bob.subscribeResource({ uri: "troupe://runs/run-missing" }).catch((error: { code: number; message: string }) => error);
    expect(theirs).toMatchObject({ code: -32002 });
    expect((theirs as { message: string }).message.replaceAll(runId, "ID")).toBe((missing as { message: string }).message.replaceAll("run-missing", "ID"));
    await expect(bob.subscribeResource({ uri: "test://watched-resource" })).rejects.toMatchObject({ code: -32002 });
    await expect(bob.subscribeResource({ uri: "troupe://threads/x" })).rejects.toMatchObject({ code: -32002 });
    await expect(bob.request({ method: "resources/subscribe", params: { uri: 42 } }, (await import("@modelcontextprotocol/sdk/types.js")).EmptyResultSchema)).rejects.toMatchObject({ code: -32602 });
    expect(app.hub.watchers(runId)).toBe(0);
  });

  it("a session follows at most 100 resources: 10,000 subscriptions leave one listener, and closing the session lets go of all", async () => {
    const app = await makeApp();
    const http = await connect(await listen(app));
    const runId = await waitingRun(http);
    // In memory, the same server a session gets: the attack is in the requests, not the transport.
    const server = createTroupeMcpServer({ tasks: app.tasks, hub: app.hub }, LOCAL_PRINCIPAL);
    const client = new Client({ name: "flood", version: "1" });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
    clients.push(client);
    // Distinct URIs of the same run: its id with some characters percent-encoded.
    const variants = (index: number) => `troupe://runs/${[...runId].map((char, at) => (at < 14 && (index >> at) & 1 ? `%${char.charCodeAt(0).toString(16).padStart(2, "0")}` : char)).join("")}`;
    const outcomes = { ok: 0, full: 0, other: [] as string[] };
    for (let start = 0; start < 10_000; start += 500) {
      const batch = await Promise.allSettled(Array.from({ length: 500 }, (_, offset) => client.subscribeResource({ uri: variants(start + offset) })));
      for (const result of batch) {
        if (result.status === "fulfilled") outcomes.ok += 1;
        else if (/follows 100 resources already/.test(String(result.reason))) outcomes.full += 1;
        else outcomes.other.push(String(result.reason));
      }
    }
    expect(outcomes).toEqual({ ok: 100, full: 9_900, other: [] });
    expect(app.hub.watchers(runId)).toBe(1);
    // Room again once one is let go.
    await client.unsubscribeResource({ uri: variants(0) });
    await client.subscribeResource({ uri: variants(5_000) });
    await client.close();
    await waitFor(() => (app.hub.watchers(runId) === 0 ? true : undefined), "the closed session's listener to go");
  });
});
