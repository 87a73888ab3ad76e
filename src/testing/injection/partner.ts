import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { A2A_PROTOCOL_VERSION, AgentCard, TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, type ExecutionEventBus, InMemoryTaskStore, type RequestContext } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import express from "express";

/** What the partner needs of its world: where to note what it was sent, and what to answer. */
interface PartnerWorld {
  readonly partnerMessages: string[];
  readonly planted: { remoteAnswer?: string };
  resolve(text: string): string;
}

export interface Partner {
  /** Its agent card's URL. */
  card: string;
  close(): Promise<void>;
}

/**
 * The partner company's agent: a remote A2A agent that is not troupe, built from the official
 * SDK's server pieces. It notes every message it is sent (exfiltration lands there) and answers
 * with the world's planted answer, as a finished task.
 */
export async function startPartner(world: PartnerWorld): Promise<Partner> {
  let port = 0;
  const card = (): AgentCard => ({
    name: "partner",
    description: "the partner company's agent: answers questions about deliveries",
    supportedInterfaces: [{ url: `http://127.0.0.1:${port}/rpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "deliveries", name: "Deliveries", description: "answers when deliveries leave", tags: ["deliveries"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  });
  const executor = {
    execute: async (context: RequestContext, bus: ExecutionEventBus) => {
      const said = context.userMessage.parts.map((part) => (part.content?.$case === "text" ? part.content.value : part.content?.$case === "data" ? JSON.stringify(part.content.value) : "")).join("\n");
      world.partnerMessages.push(said);
      const answer = world.resolve(world.planted.remoteAnswer ?? "the delivery leaves on tuesday");
      const base = { id: context.taskId, contextId: context.contextId, history: [context.userMessage], metadata: undefined };
      bus.publish(
        AgentEvent.task({
          ...base,
          artifacts: [{ artifactId: "answer", name: "answer", description: "", parts: [{ content: { $case: "text", value: answer }, mediaType: "text/plain", filename: "", metadata: undefined }], metadata: undefined, extensions: [] }],
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        }),
      );
    },
    cancelTask: async () => {},
  };
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  const app = express();
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => AgentCard.toJSON(card()) as AgentCard }));
  app.use("/rpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  return {
    card: `http://127.0.0.1:${port}/.well-known/agent-card.json`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
