import { A2A_PROTOCOL_VERSION, type AgentCard, type AgentSkill } from "@a2a-js/sdk";
import { duplicateInterfacesForLegacy } from "@a2a-js/sdk/compat/v0_3";
import type { AgentRegistry } from "../../agents/define-agent.js";
import { truncate } from "../../core/text.js";

/** Where the A2A transports are served, under the server's base URL. */
export const A2A_PATHS = { jsonRpc: "/a2a/jsonrpc", rest: "/a2a/rest", card: "/.well-known/agent-card.json" } as const;

function skill(id: string, name: string, description: string, tags: readonly string[], examples: string[] = []): AgentSkill {
  return { id, name, description: truncate(description, 1_000), tags: [...tags], examples, inputModes: [], outputModes: [], securityRequirements: [] };
}

/**
 * troupe's agent card: the JSON-RPC and HTTP+JSON interfaces at the base URL the client reached
 * (each also offered at A2A 0.3), streaming, a skill for a whole task and one per agent (its
 * description, its capabilities as tags), and — when the server requires API keys — a bearer
 * security scheme that says so.
 */
export function agentCardFor(agents: AgentRegistry, baseUrl: string, keysRequired: boolean): AgentCard {
  const base = baseUrl.replace(/\/+$/, "");
  const capabilities = agents.capabilities();
  return {
    name: "troupe",
    description:
      "A multi-agent problem solver: it plans a task as a graph of subtasks, runs them in parallel on agents with tools (files, code, search, computation, memory), reviews the work and answers with a decision trace. A task is a troupe run; its context id is the run's thread (a conversation); a run waiting for a person asks with input-required; files it writes come back as artifacts.",
    supportedInterfaces: duplicateInterfacesForLegacy(
      [
        { url: `${base}${A2A_PATHS.jsonRpc}`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION },
        { url: `${base}${A2A_PATHS.rest}`, protocolBinding: "HTTP+JSON", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION },
      ],
      ["JSONRPC", "HTTP+JSON"],
    ),
    provider: undefined,
    version: "0.1.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: keysRequired
      ? { bearer: { scheme: { $case: "httpAuthSecurityScheme", value: { description: "a troupe API key (TROUPE_API_KEYS), sent as Authorization: Bearer <key>", scheme: "Bearer", bearerFormat: "" } } } }
      : {},
    securityRequirements: keysRequired ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain", "text/markdown", "application/json", "application/octet-stream"],
    skills: [
      skill("solve", "Solve a task", "Plans the task as subtasks with data dependencies, runs them in parallel on the agents below, reviews and answers.", capabilities, [
        "compute 17% of 2,340 and save it to result.txt",
      ]),
      ...agents.list().map((agent) => skill(`agent:${agent.name}`, agent.name, agent.description, agent.capabilities ?? [])),
    ],
    signatures: [],
  };
}
