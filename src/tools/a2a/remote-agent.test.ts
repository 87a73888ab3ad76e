import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { A2A_PROTOCOL_VERSION, AgentCard, Role, TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, type ExecutionEventBus, InMemoryTaskStore, type RequestContext } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import type { RemoteTaskRecord, RemoteTasks } from "../../core/remote-tasks.js";
import { ToolRegistry } from "../registry.js";
import { TrustPolicy } from "../trust-policy.js";
import { connectRemoteAgent, type RemoteCallValue } from "./remote-agent.js";
import { createGuardedFetch } from "./guarded-fetch.js";

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** An A2A agent that is not troupe: the SDK's own server pieces, answering each message with its text upper-cased after a moment, or at once with a message. */
async function plainAgent(options: { answerWithMessage?: boolean; cardElsewhere?: boolean } = {}) {
  const seen: Array<{ text: string; authorization: string | undefined }> = [];
  let port = 0;
  const card = (): AgentCard => ({
    name: "upper",
    description: "upper-cases text",
    supportedInterfaces: [{ url: `http://127.0.0.1:${port}/rpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "upper-case", name: "Upper case", description: "upper-cases text", tags: ["shout"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  });
  const executor = {
    execute: async (context: RequestContext, bus: ExecutionEventBus) => {
      const text = context.userMessage.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
      seen.push({ text, authorization: (context.context.state.get("headers") as Record<string, string | undefined>).authorization });
      if (options.answerWithMessage) {
        bus.publish(AgentEvent.message({ messageId: "reply", contextId: context.contextId, taskId: "", role: Role.ROLE_AGENT, parts: [{ content: { $case: "text", value: text.toUpperCase() }, mediaType: "text/plain", filename: "", metadata: undefined }], metadata: undefined, extensions: [], referenceTaskIds: [] }));
        return;
      }
      const base = { id: context.taskId, contextId: context.contextId, artifacts: [], history: [context.userMessage], metadata: undefined };
      bus.publish(AgentEvent.task({ ...base, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() } }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      bus.publish(AgentEvent.artifactUpdate({ taskId: context.taskId, contextId: context.contextId, artifact: { artifactId: "out", name: "out", description: "", parts: [{ content: { $case: "text", value: text.toUpperCase() }, mediaType: "text/plain", filename: "", metadata: undefined }], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      bus.publish(AgentEvent.statusUpdate({ taskId: context.taskId, contextId: context.contextId, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
    },
    cancelTask: async () => {},
  };
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  const start = async (app: express.Express): Promise<number> => {
    const server = createServer(app);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return (server.address() as AddressInfo).port;
  };
  const app = express();
  const cards = options.cardElsewhere ? express() : app;
  cards.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => AgentCard.toJSON(card()) as AgentCard }));
  app.use("/rpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  port = await start(app);
  const cardPort = options.cardElsewhere ? await start(cards) : port;
  return { url: `http://127.0.0.1:${cardPort}/.well-known/agent-card.json`, seen };
}

class MemoryRemoteTasks implements RemoteTasks {
  readonly records = new Map<string, RemoteTaskRecord>();
  async find(callId: string) {
    return this.records.get(callId);
  }
  async save(record: RemoteTaskRecord) {
    if (!this.records.has(record.callId)) this.records.set(record.callId, record);
  }
}

const loopback = { allowHosts: [], denyHosts: [], allowAddresses: ["127.0.0.1/32"] };

describe("a remote A2A agent that is not troupe", () => {
  it("is reached through its card; the same call again waits on the task it made instead of sending the message twice", async () => {
    const agent = await plainAgent();
    const tasks = new MemoryRemoteTasks();
    const connection = await connectRemoteAgent({ name: "upper", a2a: agent.url }, { rules: loopback, tasks });
    expect(connection.capabilities).toEqual(["shout"]);
    expect(connection.tool.name).toBe("a2a.upper");
    const context = { workspace: "/tmp", callId: "run-1/r1/1/remote/1/abc" };
    const first = (await connection.tool.execute({ text: "hello" }, context)) as RemoteCallValue;
    expect(first).toMatchObject({ state: "completed", result: "HELLO" });
    expect(tasks.records.get(context.callId)?.taskId).toBe(first.taskId);
    // The process died after the call and before its result was saved: the call comes again.
    const again = (await connection.tool.execute({ text: "hello" }, context)) as RemoteCallValue;
    expect(again).toMatchObject({ state: "completed", taskId: first.taskId, result: "HELLO" });
    expect(agent.seen.map((message) => message.text)).toEqual(["hello"]);
  });

  it("its answer is untrusted data by default, and trusted (still private: it leaves only by the task's word) when the config says trusted", async () => {
    const agent = await plainAgent({ answerWithMessage: true });
    const registry = new ToolRegistry().configure({ trust: new TrustPolicy() });
    const plain = await connectRemoteAgent({ name: "upper", a2a: agent.url }, { rules: loopback });
    const mine = await connectRemoteAgent({ name: "mine", a2a: agent.url, trusted: true }, { rules: loopback });
    registry.register(plain.tool);
    registry.register(mine.tool);
    const untrusted = await registry.call("a2a.upper", { text: "hi" }, { workspace: "/tmp" });
    expect(untrusted).toMatchObject({ ok: true, value: { result: "HI" }, label: { trust: "untrusted", sources: [{ kind: "remote-agent", name: "upper" }] } });
    const trusted = await registry.call("a2a.mine", { text: "hi" }, { workspace: "/tmp" });
    expect(trusted).toMatchObject({ ok: true, value: { result: "HI" }, label: { trust: "trusted", held: [{ kind: "remote-agent", name: "mine" }] } });
  });

  it("an agent that answers with a message at once: its text is the result", async () => {
    const agent = await plainAgent({ answerWithMessage: true });
    const connection = await connectRemoteAgent({ name: "upper", a2a: agent.url }, { rules: loopback });
    expect(await connection.tool.execute({ text: "quick" }, { workspace: "/tmp" })).toMatchObject({ state: "completed", result: "QUICK" });
  });

  it("sends its key only to the card's own origin, never to another host the card names", async () => {
    const same = await plainAgent();
    const withKey = await connectRemoteAgent({ name: "upper", a2a: same.url, apiKeyEnv: "UPPER_KEY" }, { rules: loopback, env: { UPPER_KEY: "k-123" } });
    await withKey.tool.execute({ text: "one" }, { workspace: "/tmp" });
    expect(same.seen[0]?.authorization).toBe("Bearer k-123");
    // The card on one origin names an interface on another: the agent is reached, the key stays home.
    const elsewhere = await plainAgent({ cardElsewhere: true });
    const other = await connectRemoteAgent({ name: "upper", a2a: elsewhere.url, apiKeyEnv: "UPPER_KEY" }, { rules: loopback, env: { UPPER_KEY: "k-123" } });
    expect(await other.tool.execute({ text: "two" }, { workspace: "/tmp" })).toMatchObject({ state: "completed", result: "TWO" });
    expect(elsewhere.seen).toEqual([{ text: "two", authorization: undefined }]);
    await expect(connectRemoteAgent({ name: "upper", a2a: same.url, apiKeyEnv: "UNSET_KEY" }, { rules: loopback, env: {} })).rejects.toMatchObject({ code: "missing_api_key" });
  });

  it("caps what a peer may send", async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ padding: "x".repeat(10_000) }));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const guardedFetch = createGuardedFetch({ rules: loopback, maxBytes: 1_000 });
    const response = await guardedFetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await expect(response.json()).rejects.toMatchObject({ message: expect.stringMatching(/more than 1000 bytes/) });
  });
});
