import path from "node:path";
import type { AgentRegistry } from "../agents/define-agent.js";
import { createAgentRegistry } from "../agents/index.js";
import type { RunLedger } from "../agents/run-ledger.js";
import { loadConfig, type TroupeConfig } from "../config/config-file.js";
import { type Env, parseEnv } from "../config/env.js";
import { resolveToolsConfig, type ToolsConfig } from "../config/tools-config.js";
import { InputError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import type { ResumeDecision, RunRequestInput, RunResult } from "../core/run.js";
import { buildGraph, type TroupeGraph } from "../graph/build-graph.js";
import type { CallPolicy } from "../providers/call-policy.js";
import type { ProviderDefinition } from "../providers/provider.js";
import type { ModelSet } from "../providers/registry.js";
import { openStore, type RunRecord, type Store } from "../store/index.js";
import type { ToolOutcome } from "../tools/define-tool.js";
import { OPERATOR, type PermissionPolicy } from "../tools/permissions.js";
import type { ToolRegistry } from "../tools/registry.js";
import { checkWorkspacePath, workspaceRoot } from "../tools/workspace.js";
import { setWorkspaceQuota } from "../tools/workspace-quota.js";
import { createModels, type ProviderSource, registryFor } from "./model-selection.js";
import { type EnqueueOptions, type InvokeOptions, type ResumeOptions, RunLifecycle, type RunOptions } from "./run-lifecycle.js";
import { type PendingInterrupt, runningSubtasks, showRun, threadInterrupts, type RunView } from "./run-queries.js";
import { createToolPlatform, type ToolPlatform } from "./tool-platform.js";

export type { ProviderSource } from "./model-selection.js";
export { type Driver, type EnqueueOptions, type InvokeOptions, isAlive, type ResumeOptions, type RunOptions } from "./run-lifecycle.js";
export type { PendingInterrupt, RunView } from "./run-queries.js";

export interface TroupeOptions {
  env?: Env;
  dataDir?: string;
  workspace?: string;
  /** `provider` or `provider:model`; defaults to TROUPE_PROVIDER, then the config file, then `offline`. */
  provider?: string;
  model?: string;
  /** The config to use instead of reading `troupe.config.json`/`.ts` (or TROUPE_CONFIG) from `configDir`. */
  config?: TroupeConfig;
  /** Where to look for the config file (default: the working directory). */
  configDir?: string;
  /** Timeout, retries and backoff of model calls, over the environment and config file. */
  callPolicy?: Partial<CallPolicy>;
  /** Models to use instead of creating them from a provider (tests, embedding). */
  models?: ModelSet;
  providers?: ProviderDefinition[];
  tools?: ToolRegistry;
  agents?: AgentRegistry;
  maxWorkerSteps?: number;
  /** The config file to read, instead of TROUPE_CONFIG or the one found in `configDir` (`--config`). */
  configFile?: string;
  /** The `tools` section given in code, instead of the config file's. */
  toolsConfig?: unknown;
  /** `postgres://…`: the store on Postgres (default TROUPE_DATABASE_URL; SQLite in the data directory when neither is set). */
  databaseUrl?: string;
  /** Postgres: seconds a worker may be silent before another takes its runs over (default TROUPE_LEASE_SECONDS, else 30). */
  leaseSeconds?: number;
  /** An open store to use instead of opening one (it is closed with the instance). */
  store?: Store;
}

/** A troupe instance: one compiled graph, its store, tools, agents and models. */
export class Troupe {
  readonly env: Env;
  readonly store: Store;
  readonly graph: TroupeGraph;
  readonly tools: ToolRegistry;
  readonly agents: AgentRegistry;
  readonly models: ModelSet;
  readonly providerSource: ProviderSource;
  readonly workspace: string;
  readonly config: TroupeConfig;
  readonly policy: PermissionPolicy;
  readonly toolsConfig: ToolsConfig;
  /** Why optional MCP servers were skipped. */
  readonly warnings: string[];
  readonly #maxWorkerSteps: number;
  /** The budget ledgers of the runs this instance is driving, shared with the graph's nodes. */
  readonly #ledgers: Map<string, RunLedger>;
  readonly #platform: ToolPlatform;
  readonly #lifecycle: RunLifecycle;
  /** Whether this instance owns its store and tool platform (false for one made by `withWorkspace`). */
  readonly #owner: boolean;

  private constructor(fields: {
    env: Env;
    store: Store;
    graph: TroupeGraph;
    tools: ToolRegistry;
    agents: AgentRegistry;
    models: ModelSet;
    providerSource: ProviderSource;
    workspace: string;
    config: TroupeConfig;
    maxWorkerSteps: number;
    ledgers: Map<string, RunLedger>;
    platform: ToolPlatform;
    toolsConfig: ToolsConfig;
    owner?: boolean;
  }) {
    this.env = fields.env;
    this.store = fields.store;
    this.graph = fields.graph;
    this.tools = fields.tools;
    this.agents = fields.agents;
    this.models = fields.models;
    this.providerSource = fields.providerSource;
    this.workspace = fields.workspace;
    this.config = fields.config;
    this.#maxWorkerSteps = fields.maxWorkerSteps;
    this.#ledgers = fields.ledgers;
    this.#platform = fields.platform;
    this.policy = fields.platform.policy;
    this.warnings = fields.platform.warnings;
    this.toolsConfig = fields.toolsConfig;
    this.#owner = fields.owner ?? true;
    this.#lifecycle = new RunLifecycle({ store: this.store, graph: this.graph, tools: this.tools, models: this.models, config: this.config, maxWorkerSteps: this.#maxWorkerSteps, ledgers: this.#ledgers });
  }

  static async create(options: TroupeOptions = {}): Promise<Troupe> {
    const env = options.env ?? parseEnv();
    const loaded = options.config ? { config: options.config, file: undefined } : await loadConfig(options.configDir, options.configFile ?? env.TROUPE_CONFIG);
    const { config } = loaded;
    let models = options.models;
    let providerSource: ProviderSource = "injected";
    if (!models) {
      const registry = registryFor(config, options.providers ?? []);
      ({ models, source: providerSource } = createModels(registry, { env, config, provider: options.provider, model: options.model, policy: options.callPolicy }));
    }
    // The config file's `tools` section (validated here, where its folders are made absolute against the file's own folder).
    const toolsConfig =
      options.toolsConfig !== undefined
        ? resolveToolsConfig(options.toolsConfig)
        : resolveToolsConfig(config.tools, { base: loaded.file ? path.dirname(loaded.file) : path.resolve(options.configDir ?? process.cwd()), file: loaded.file });
    // A workspace path that cannot be a folder is bad input, refused before anything is written.
    checkWorkspacePath(options.workspace ?? env.TROUPE_WORKSPACE);
    const databaseUrl = options.databaseUrl ?? env.TROUPE_DATABASE_URL;
    const store =
      options.store ??
      (await openStore({
        dataDir: options.dataDir ?? env.TROUPE_DATA_DIR,
        ...(databaseUrl ? { databaseUrl } : {}),
        ...((options.leaseSeconds ?? env.TROUPE_LEASE_SECONDS) !== undefined ? { leaseSeconds: options.leaseSeconds ?? env.TROUPE_LEASE_SECONDS } : {}),
      }));
    try {
      const workspace = await workspaceRoot(options.workspace ?? env.TROUPE_WORKSPACE);
      setWorkspaceQuota(workspace, toolsConfig.quota);
      const platform = await createToolPlatform({ config: toolsConfig, agents: options.agents ?? createAgentRegistry(), tools: options.tools, audit: store.audit });
      const { tools, agents } = platform;
      const ledgers = new Map<string, RunLedger>();
      let graph: TroupeGraph;
      try {
        graph = buildGraph({ models, tools, agents, workspace, stash: store.stash, ledgers }, store.checkpointer);
      } catch (error) {
        await platform.close();
        throw error;
      }
      const maxWorkerSteps = options.maxWorkerSteps ?? LIMITS.workerMaxSteps;
      return new Troupe({ env, store, graph, tools, agents, models, providerSource, workspace, config, maxWorkerSteps, ledgers, platform, toolsConfig });
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  /**
   * An instance on the same store, tools, agents and permissions that works in another workspace,
   * with other models when given: an eval case gets its own files (and its own cassette) while
   * its run is kept with every other. Closing it closes nothing it shares.
   */
  async withWorkspace(workspace: string, options: { models?: ModelSet } = {}): Promise<Troupe> {
    checkWorkspacePath(workspace);
    const root = await workspaceRoot(workspace);
    setWorkspaceQuota(root, this.toolsConfig.quota);
    const models = options.models ?? this.models;
    const ledgers = new Map<string, RunLedger>();
    const graph = buildGraph({ models, tools: this.tools, agents: this.agents, workspace: root, stash: this.store.stash, ledgers }, this.store.checkpointer);
    return new Troupe({
      env: this.env,
      store: this.store,
      graph,
      tools: this.tools,
      agents: this.agents,
      models,
      providerSource: this.providerSource,
      workspace: root,
      config: this.config,
      maxWorkerSteps: this.#maxWorkerSteps,
      ledgers,
      platform: this.#platform,
      toolsConfig: this.toolsConfig,
      owner: false,
    });
  }

  /** Starts a run and drives it until it finishes or waits for a person. */
  run(input: RunRequestInput, options: RunOptions = {}): Promise<RunResult> {
    return this.#lifecycle.run(input, options);
  }

  /**
   * Records a run as queued, to be started later with `start` (the server's queue). The record
   * is written (and synced) before this returns, so an accepted run survives a crash.
   */
  enqueue(input: RunRequestInput, options: EnqueueOptions = {}): Promise<RunRecord> {
    return this.#lifecycle.enqueue(input, options);
  }

  /** Starts a queued run that has never run. */
  start(runId: string, options: InvokeOptions = {}): Promise<RunResult> {
    return this.#lifecycle.start(runId, options);
  }

  /**
   * Continues a thread's latest run: with a person's decision when it waits for one, or from its
   * last checkpoint when its process died or it was cancelled. Finished subtasks are not re-run.
   */
  resume(threadId: string, decision: ResumeDecision | undefined, options: ResumeOptions = {}): Promise<RunResult> {
    return this.#lifecycle.resume(threadId, decision, options);
  }

  /** The interrupts a thread's run waits on, each with its id (several subtasks may wait for approval at once). */
  pendingInterrupts(threadId: string): Promise<PendingInterrupt[]> {
    return threadInterrupts(this.graph, threadId);
  }

  /**
   * A run as it stands. The plan and trace come from the thread's checkpoint while the run is
   * the thread's latest; an older run on a reused thread shows what its record kept.
   */
  show(runId: string): Promise<RunView> {
    return showRun(this.store, this.graph, runId);
  }

  /** Subtasks of a run that have started and not ended, by its events. */
  runningSubtasks(runId: string): Promise<string[]> {
    return runningSubtasks(this.store, runId);
  }

  /**
   * Calls a tool directly, through the same permissions and audit as an agent's call: as an
   * agent, or as the local operator (every level, no approval) when no agent is given. No one
   * can be asked for an approval here, so an agent's high-risk call is refused at once
   * (`approval_required`). `principal` names who is behind the call in the audit trail (an API
   * key's name).
   */
  async callTool(name: string, args: unknown, options: { agent?: string; signal?: AbortSignal; principal?: string } = {}): Promise<ToolOutcome> {
    if (options.agent !== undefined && options.agent !== OPERATOR && !this.agents.get(options.agent)) {
      throw new InputError("unknown_agent", `unknown agent "${options.agent}"; agents: ${this.agents.names().join(", ")}`);
    }
    return this.tools.call(name, args, {
      workspace: this.workspace,
      agent: options.agent ?? OPERATOR,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.principal !== undefined ? { principal: options.principal } : {}),
    });
  }

  /**
   * Closes the store and the MCP servers' connections (stdio servers are stopped); nothing for an
   * instance made by `withWorkspace`. SQLite's connections are closed before this returns;
   * `shutdown` waits for everything.
   */
  close(): void {
    if (!this.#owner) return;
    void this.store.close();
    void this.#platform.close();
  }

  /** Like close, and waits for the MCP connections to end. */
  async shutdown(): Promise<void> {
    if (!this.#owner) return;
    await this.store.close();
    await this.#platform.close();
  }
}

export function createTroupe(options: TroupeOptions = {}): Promise<Troupe> {
  return Troupe.create(options);
}
