import { AgentRegistry, type AgentDefinition, defineAgent } from "../agents/define-agent.js";
import type { RemoteAgentConfig } from "../tools/a2a/remote-agent-config.js";
import type { ToolsConfig } from "../config/tools-config.js";
import { ConfigError, errorMessage } from "../core/errors.js";
import type { FileLabelStore } from "../core/file-labels.js";
import type { RemoteTasks } from "../core/remote-tasks.js";
import { connectRemoteAgent } from "../tools/a2a/remote-agent.js";
import type { TrustConfig } from "../tools/trust-config.js";
import type { AuditSink } from "../tools/audit.js";
import { type BuiltinToolSettings, createBuiltinRegistry } from "../tools/builtin/index.js";
import type { McpConnection } from "../tools/mcp/mcp-client.js";
import { connectMcpServer } from "../tools/mcp/mcp-connect.js";
import type { CredentialKeeping } from "../tools/mcp/oauth/credential-vault.js";
import type { NetworkRules } from "../tools/net/address-guard.js";
import { type Grant, PermissionPolicy } from "../tools/permissions.js";
import type { ToolRegistry } from "../tools/registry.js";
import { TrustPolicy } from "../tools/trust-policy.js";

/** The tools of an engine, wired: built-ins and MCP tools in one registry, under one policy and one audit sink. */
export interface ToolPlatform {
  tools: ToolRegistry;
  policy: PermissionPolicy;
  /** The agents with `tools` set to what each can reach under the policy (what models are offered). */
  agents: AgentRegistry;
  mcp: McpConnection[];
  /** Why an optional MCP server was skipped. */
  warnings: string[];
  close(): Promise<void>;
}

export interface ToolPlatformOptions {
  config: ToolsConfig;
  agents: AgentRegistry;
  /** A registry to use instead of the built-ins (library users, tests). */
  tools?: ToolRegistry;
  audit?: AuditSink;
  /** The built-in tools that need the store: long-term memory and earlier turns' results. */
  builtins?: Pick<BuiltinToolSettings, "memory" | "threadResults">;
  /** Remote (A2A) agents of the config file, and where their tasks are kept by call id. */
  remote?: { agents: RemoteAgentConfig[]; tasks?: RemoteTasks };
  /** Where scripts that write run on a staged copy of the workspace (beside the data, so a crash leaves their journals). */
  stagingDir?: string;
  /** The config's `trust` section: trusted and untrusted workspace paths, egress destinations, and the policy. */
  trust?: Partial<TrustConfig>;
  /** Where MCP servers' OAuth credentials are kept (the store, sealed with troupe's secret key). */
  credentials?: CredentialKeeping;
  /** Told what an MCP server did that troupe refused outside any call. */
  warn?: (message: string) => void;
  /** Where the labels of files troupe writes are kept (the store's): without it a file's label is its path's alone. */
  fileLabels?: FileLabelStore;
}

/** An agent's role defaults as grants: the config's replacement when it has one, else the agent's own. */
export function roleGrants(agent: AgentDefinition, tools: ToolRegistry, config: ToolsConfig): Grant[] {
  const grantedBy = `role:${agent.name}`;
  const replaced = config.permissions.roles[agent.name];
  if (replaced) return replaced.map((grant) => ({ ...grant, agent: agent.name }));
  const named = agent.tools.flatMap((name) => {
    const tool = tools.get(name);
    return tool ? [{ agent: agent.name, tool: name, level: tool.permission, grantedBy }] : [];
  });
  const patterns = (agent.grants ?? []).map((grant) => ({ agent: agent.name, tool: grant.tool, level: grant.level, grantedBy }));
  return [...named, ...patterns];
}

/** Builds the registry (built-ins, then each configured MCP server's tools), the policy and the effective agents. */
export async function createToolPlatform(options: ToolPlatformOptions): Promise<ToolPlatform> {
  const { config } = options;
  const sandbox = options.stagingDir !== undefined ? { ...config.sandbox, stagingDir: options.stagingDir } : config.sandbox;
  const tools = options.tools ?? createBuiltinRegistry({ settings: { sandbox, fetch: config.fetch, search: config.search, ...options.builtins } });
  const mcp: McpConnection[] = [];
  const warnings: string[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(mcp.map((connection) => connection.close()));
  };
  const declared = new AgentRegistry();
  for (const agent of options.agents.list()) declared.register(agent);
  for (const remote of options.remote?.agents ?? []) {
    try {
      if (declared.get(remote.name)) throw new ConfigError("invalid_config", `the remote agent "${remote.name}": an agent with that name is already declared`, { agent: remote.name });
      // One network policy for everything troupe fetches: http_fetch's allow and deny lists and allowed private addresses.
      const rules: NetworkRules = { allowHosts: config.fetch.allowHosts ?? [], denyHosts: config.fetch.denyHosts ?? [], allowAddresses: config.fetch.allowAddresses ?? [] };
      const connection = await connectRemoteAgent(remote, { rules, ...(options.remote?.tasks ? { tasks: options.remote.tasks } : {}) });
      tools.register(connection.tool);
      declared.register(
        defineAgent({
          name: remote.name,
          description: connection.description,
          capabilities: connection.capabilities,
          tools: [connection.tool.name],
          instructions: "",
          source: "remote",
          remote: { url: remote.a2a, tool: connection.tool.name },
        }),
      );
    } catch (error) {
      if (remote.optional && !(error instanceof ConfigError && error.code === "invalid_config")) {
        warnings.push((error as Error).message);
        continue;
      }
      throw error;
    }
  }
  // OAuth discovery may reach what http_fetch may: one network policy for everything troupe fetches.
  const rules: NetworkRules = { allowHosts: config.fetch.allowHosts ?? [], denyHosts: config.fetch.denyHosts ?? [], allowAddresses: config.fetch.allowAddresses ?? [] };
  for (const [name, server] of Object.entries(config.mcp.servers)) {
    try {
      const connection = await connectMcpServer(name, server, { rules, ...(options.credentials ? { credentials: options.credentials } : {}), ...(options.warn ? { warn: options.warn } : {}) });
      mcp.push(connection);
      for (const tool of connection.tools) tools.register(tool);
    } catch (error) {
      if (server.optional) {
        warnings.push((error as Error).message);
        continue;
      }
      await close();
      throw error;
    }
  }
  const grants = [...declared.list().flatMap((agent) => roleGrants(agent, tools, config)), ...config.permissions.grants];
  const policy = new PermissionPolicy({ grants, defaultLevel: config.permissions.defaultLevel, approval: config.approval });
  let trust: TrustPolicy;
  try {
    trust = new TrustPolicy(options.trust, options.fileLabels ? { fileLabels: options.fileLabels } : {});
  } catch (error) {
    await close();
    throw new ConfigError("invalid_config", `trust: ${errorMessage(error)}`, { setting: "trust" });
  }
  // A config written when the workspace was trusted by default: its untrusted globs alone no longer trust the rest.
  if ((options.trust?.untrusted ?? []).length > 0 && options.trust?.trusted === undefined) {
    warnings.push('trust.untrusted without trust.trusted changes nothing: every workspace file is untrusted by default; to trust the rest of the workspace as before, add "trusted": ["**"] (docs/trust.md)');
  }
  tools.configure({ policy, trust, concurrency: config.execution.concurrency, ...(options.audit ? { audit: options.audit } : {}) });
  const agents = new AgentRegistry();
  for (const agent of declared.list()) {
    const reachable = policy.reachable(agent.name, tools.list());
    agents.register({ ...agent, tools: reachable, coreTools: agent.tools.filter((name) => reachable.includes(name)) });
  }
  return { tools, policy, agents, mcp, warnings, close };
}
