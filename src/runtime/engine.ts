import { existsSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import path from "node:path";
import { createHash } from "node:crypto";
import type { AgentRegistry } from "../agents/define-agent.js";
import { createAgentRegistry } from "../agents/index.js";
import type { ToolDiscovery } from "../agents/tool-offer.js";
import { type Decision, decide } from "../agents/voter.js";
import { isRemoteAgent, loadConfig, remoteAgentsOf, type TroupeConfig } from "../config/config-file.js";
import { type Env, parseEnv } from "../config/env.js";
import { resolveToolsConfig, type ToolsConfig } from "../config/tools-config.js";
import { ConfigError, errorMessage, InputError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import type { ReviewMode } from "../core/review-mode.js";
import type { ResumeDecision, RunRequestInput, RunResult } from "../core/run.js";
import { z } from "zod";
import { type DecideRequestInput, parseDecideRequest } from "../core/vote.js";
import { buildGraph, type TroupeGraph } from "../graph/build-graph.js";
import type { CallPolicy } from "../providers/call-policy.js";
import type { ProviderDefinition } from "../providers/provider.js";
import { type ModelRoute, type ModelSet, type ProviderRegistry, routeForModel } from "../providers/registry.js";
import { type MemoryIndexConfig, openStore, type RunRecord, type Store } from "../store/index.js";
import type { ToolOutcome } from "../tools/define-tool.js";
import { type FileTrustReport, fileTrustReport } from "../tools/file-trust-report.js";
import { TrustPolicy } from "../tools/trust-policy.js";
import { OPERATOR, type PermissionPolicy } from "../tools/permissions.js";
import { ToolIndex } from "../tools/discovery.js";
import type { ToolRegistry } from "../tools/registry.js";
import { checkWorkspacePath, workspaceRoot } from "../tools/workspace.js";
import { setWorkspaceQuota } from "../tools/workspace-quota.js";
import { checkAgentTools, withConfigAgents } from "./config-agents.js";
import { resolveVoters } from "./decision.js";
import { callPolicyOf, createModels, type ProviderSource, registryFor } from "./model-selection.js";
import { memoryNamespaceFor, memoryStoreOptions, threadResultsOf } from "./memory-owner.js";
import { type EnqueueOptions, type InvokeOptions, type ResumeOptions, RunLifecycle, type RunOptions } from "./run-lifecycle.js";
import { type PendingInterrupt, runningSubtasks, showRun, threadInterrupts, type RunView } from "./run-queries.js";
import { createToolPlatform, type ToolPlatform } from "./tool-platform.js";
import { mcpCredentialsOf } from "./mcp-credentials.js";
import { type ForkRequest, parseForkRequest, threadHistory } from "./fork.js";
import { collectGarbage, deleteRun, deleteThread, type GcOptions } from "./retention.js";
import { checkWebhook, WebhookSender } from "./webhook-sender.js";
import { checkRunRequest } from "./request-check.js";
import { RuntimeGrants } from "./grants.js";
import { Schedules } from "./schedules.js";
import { WrittenFiles } from "../tools/written-files.js";
import type { GcReport } from "../core/retention.js";
import type { HistoryEntry } from "../graph/checkpoint-history.js";

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
  /** When the critic reviews a run's outcomes (auto, always, never), over the config's `review`; a run's own `review` takes precedence. */
  review?: ReviewMode;
  /** The config file to read, instead of TROUPE_CONFIG or the one found in `configDir` (`--config`). */
  configFile?: string;
  /** The `tools` section given in code, instead of the config file's. */
  toolsConfig?: unknown;
  /** An embeddings model for long-term memory's semantic search, instead of `memory.embeddings` / TROUPE_EMBEDDINGS. */
  embeddings?: MemoryIndexConfig;
  /** `postgres://…`: the store on Postgres (default TROUPE_DATABASE_URL; SQLite in the data directory when neither is set). */
  databaseUrl?: string;
  /** Postgres: seconds a worker may be silent before another takes its runs over (default TROUPE_LEASE_SECONDS, else 30). */
  leaseSeconds?: number;
  /** An open store to use instead of opening one (it is closed with the instance). */
  store?: Store;
}

/** A run request as the library takes it: its output schema a JSON Schema or a zod schema. */
export type LibraryRunRequest = Omit<RunRequestInput, "outputSchema"> & { outputSchema?: RunRequestInput["outputSchema"] | z.ZodType };

/** The request with a zod output schema turned into the JSON Schema a run keeps. */
function withJsonOutputSchema(input: LibraryRunRequest): RunRequestInput {
  const { outputSchema, ...rest } = input;
  if (outputSchema === undefined) return rest;
  if (!(outputSchema instanceof z.ZodType)) return { ...rest, outputSchema };
  const { $schema: _dialect, ...json } = z.toJSONSchema(outputSchema, { io: "output", unrepresentable: "any" }) as Record<string, unknown>;
  return { ...rest, outputSchema: json };
}

/** What `Troupe.prepare` read and checked, before anything is opened. */
interface Prepared {
  env: Env;
  config: TroupeConfig;
  models: ModelSet;
  providerSource: ProviderSource;
  toolsConfig: ToolsConfig;
  memory: ReturnType<typeof memoryStoreOptions>;
  resolved: Record<string, string>;
  providers?: ProviderRegistry;
}

/** A troupe checked and not yet opened (`Troupe.prepare`): nothing has been written. */
export interface PreparedTroupe {
  readonly env: Env;
  readonly config: TroupeConfig;
  readonly models: ModelSet;
  readonly providerSource: ProviderSource;
  /** The config's `tools` section, resolved. */
  readonly toolsConfig: ToolsConfig;
  /** Refuses (throws an InputError) a run request this instance could never run: a webhook without its secret, an output schema that is not one, a typed answer from a model that writes none. */
  check(input: LibraryRunRequest): void;
  /** Opens the store, the workspace and the tools. */
  open(): Promise<Troupe>;
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
  /** Grants given and revoked at runtime, kept in the store and audited (`troupe grants`). */
  readonly grants: RuntimeGrants;
  /** How workers whose agents have many tools find the relevant ones. */
  readonly discovery: ToolDiscovery;
  /** The bytes of the files this process's runs wrote, for a while, by their recorded hash (A2A's file artifacts). */
  readonly writtenFiles: WrittenFiles;
  readonly #maxWorkerSteps: number;
  /** The providers, to make a voter's model named only when asked (absent when the models were given). */
  readonly #providers: ProviderRegistry | undefined;
  /** The `provider:model` each model spec of the config (agents', voters') resolved to. */
  readonly #resolved: Record<string, string>;
  readonly #platform: ToolPlatform;
  readonly #lifecycle: RunLifecycle;

  /** Schedules: cron tasks `troupe serve` fires (`troupe schedule`, `/api/v1/schedules`). */
  get schedules(): Schedules {
    return new Schedules(this.store);
  }

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
    platform: ToolPlatform;
    toolsConfig: ToolsConfig;
    owner?: boolean;
    discovery: ToolDiscovery;
    providers?: ProviderRegistry;
    resolved?: Record<string, string>;
    grants: RuntimeGrants;
    writtenFiles: WrittenFiles;
  }) {
    this.grants = fields.grants;
    this.writtenFiles = fields.writtenFiles;
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
    this.#platform = fields.platform;
    this.policy = fields.platform.policy;
    this.warnings = fields.platform.warnings;
    this.toolsConfig = fields.toolsConfig;
    this.#owner = fields.owner ?? true;
    this.discovery = fields.discovery;
    this.#providers = fields.providers;
    this.#resolved = fields.resolved ?? {};
    this.#lifecycle = new RunLifecycle({
      store: this.store,
      graph: this.graph,
      tools: this.tools,
      models: this.models,
      config: this.config,
      maxWorkerSteps: this.#maxWorkerSteps,
      agents: this.agents,
      workspace: this.workspace,
    });
  }

  static async create(options: TroupeOptions = {}): Promise<Troupe> {
    return (await Troupe.prepare(options)).open();
  }

  /**
   * Reads and checks everything an instance needs before anything is written — the config file,
   * the models, the tools section, the workspace path, the default webhook — and returns it ready
   * to open. `check` then refuses a run request that could never run here (see request-check.ts),
   * still before anything is written; `open` opens the store and the tools.
   */
  static async prepare(options: TroupeOptions = {}): Promise<PreparedTroupe> {
    const env = options.env ?? parseEnv();
    const loaded = options.config ? { config: options.config, file: undefined } : await loadConfig(options.configDir, options.configFile ?? env.TROUPE_CONFIG);
    // A review mode given in code, then TROUPE_REVIEW, over the config file's.
    const review = options.review ?? env.TROUPE_REVIEW;
    const config = review ? { ...loaded.config, review } : loaded.config;
    let models = options.models;
    let providerSource: ProviderSource = "injected";
    let providers: ProviderRegistry | undefined;
    let resolved: Record<string, string> = {};
    // Models of their own: the config's agents' and voters'.
    const ownModels = [...new Set([...(config.agents ?? []).flatMap((agent) => (!isRemoteAgent(agent) && agent.model ? [agent.model] : [])), ...(config.decide?.voters ?? []).flatMap((voter) => (voter.model ? [voter.model] : []))])];
    if (!models) {
      providers = registryFor(config, options.providers ?? []);
      ({ models, source: providerSource, resolved } = createModels(providers, { env, config, provider: options.provider, model: options.model, policy: options.callPolicy, extra: ownModels }));
    }
    // The config file's `tools` section (validated here, where its folders are made absolute against the file's own folder).
    const toolsConfig =
      options.toolsConfig !== undefined
        ? resolveToolsConfig(options.toolsConfig)
        : resolveToolsConfig(config.tools, { base: loaded.file ? path.dirname(loaded.file) : path.resolve(options.configDir ?? process.cwd()), file: loaded.file });
    // A workspace path that cannot be a folder is bad input, refused before anything is written.
    checkWorkspacePath(options.workspace ?? env.TROUPE_WORKSPACE);
    // The config's default webhook needs its secret and a URL the network rules allow, or no task could be accepted.
    if (config.webhooks?.default) {
      try {
        checkWebhook(config.webhooks.default.url, config.webhooks);
      } catch (error) {
        throw new ConfigError("invalid_config", `webhooks.default: ${errorMessage(error)}`, { setting: "webhooks.default" });
      }
    }
    // An embeddings model makes long-term memory's search hybrid; a bad one is a configuration error before anything opens.
    const memory = memoryStoreOptions(env, config, options.providers ?? [], options.embeddings);
    const prepared = { env, config, models, providerSource, toolsConfig, memory, resolved, ...(providers ? { providers } : {}) };
    return {
      env,
      config,
      models,
      providerSource,
      toolsConfig,
      check: (input) => checkRunRequest(withJsonOutputSchema(input), { config, models: prepared.models }),
      open: () => Troupe.#open(options, prepared),
    };
  }

  /** Opens what `prepare` checked: the store, then the workspace, the tools and the graph. */
  static async #open(options: TroupeOptions, prepared: Prepared): Promise<Troupe> {
    const { env, config, models, providerSource, toolsConfig, memory, providers, resolved } = prepared;
    const databaseUrl = options.databaseUrl ?? env.TROUPE_DATABASE_URL;
    // The workspace first: one that cannot be made fails before the store is written; a store that
    // cannot be opened takes back the (still empty) workspace folder this made.
    const workspacePath = options.workspace ?? env.TROUPE_WORKSPACE;
    const made = !existsSync(workspacePath);
    const workspace = await workspaceRoot(workspacePath);
    let store: Store;
    try {
      store =
        options.store ??
        (await openStore({
          dataDir: options.dataDir ?? env.TROUPE_DATA_DIR,
          ...memory,
          ...(databaseUrl ? { databaseUrl } : {}),
          ...((options.leaseSeconds ?? env.TROUPE_LEASE_SECONDS) !== undefined ? { leaseSeconds: options.leaseSeconds ?? env.TROUPE_LEASE_SECONDS } : {}),
        }));
    } catch (error) {
      if (made) await rmdir(workspace).catch(() => undefined);
      throw error;
    }
    try {
      setWorkspaceQuota(workspace, toolsConfig.quota);
      const platform = await createToolPlatform({
        config: toolsConfig,
        agents: withConfigAgents(options.agents ?? createAgentRegistry(), config, resolved),
        tools: options.tools,
        audit: store.audit,
        // Per workspace: two engines on one data directory work in their own folders.
        stagingDir: path.join(path.resolve(options.dataDir ?? env.TROUPE_DATA_DIR), "stages", createHash("sha256").update(workspace).digest("hex").slice(0, 16)),
        ...(config.trust ? { trust: config.trust } : {}),
        fileLabels: store.fileLabels,
        builtins: {
          // A run's calls reach its owner's namespace; a direct call its principal's (the local user's without one).
          memory: { memory: store.memories, namespaceOf: (context) => context.memoryNamespace ?? memoryNamespaceFor(context.principal) },
          threadResults: threadResultsOf(store),
        },
        remote: { agents: remoteAgentsOf(config), tasks: store.remoteTasks },
        credentials: mcpCredentialsOf(store, env),
      });
      const { tools, agents } = platform;
      // Grants given and revoked at runtime (troupe grants), read by the registry before every call.
      const grants = new RuntimeGrants({ store, agents, tools, policy: platform.policy });
      tools.configure({ runtimeGrants: grants });
      const writtenFiles = new WrittenFiles();
      let graph: TroupeGraph;
      let discovery: ToolDiscovery;
      try {
        checkAgentTools(config, tools);
        discovery = {
          index: new ToolIndex(tools.names().map((name) => tools.spec(name))),
          threshold: toolsConfig.discovery.threshold,
          topK: toolsConfig.discovery.topK,
          ...(toolsConfig.discovery.embeddings && models.embeddings ? { embedder: models.embeddings } : {}),
        };
        graph = buildGraph({ models, tools, agents, workspace, stash: store.stash, discovery, memory: store.memories, recallBudget: config.memory?.recallBudget, writtenFiles }, store.checkpointer);
      } catch (error) {
        await platform.close();
        throw error;
      }
      const maxWorkerSteps = options.maxWorkerSteps ?? LIMITS.workerMaxSteps;
      return new Troupe({ env, store, graph, tools, agents, models, providerSource, workspace, config, maxWorkerSteps, platform, toolsConfig, discovery, ...(providers ? { providers } : {}), resolved, grants, writtenFiles });
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
    const graph = buildGraph(
      { models, tools: this.tools, agents: this.agents, workspace: root, stash: this.store.stash, discovery: this.discovery, memory: this.store.memories, recallBudget: this.config.memory?.recallBudget, writtenFiles: this.writtenFiles },
      this.store.checkpointer,
    );
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
      platform: this.#platform,
      toolsConfig: this.toolsConfig,
      owner: false,
      discovery: this.discovery,
      ...(this.#providers ? { providers: this.#providers } : {}),
      resolved: this.#resolved,
      grants: this.grants,
      writtenFiles: this.writtenFiles,
    });
  }

  /**
   * Starts a run and drives it until it finishes or waits for a person. `outputSchema` may be a
   * zod schema as well as a JSON Schema: the answer is then JSON valid against it (`output`).
   */
  run(input: LibraryRunRequest, options: RunOptions = {}): Promise<RunResult> {
    return this.#lifecycle.run(withJsonOutputSchema(input), options);
  }

  /**
   * Records a run as queued, to be started later with `start` (the server's queue). The record
   * is written (and synced) before this returns, so an accepted run survives a crash.
   */
  enqueue(input: LibraryRunRequest, options: EnqueueOptions = {}): Promise<RunRecord> {
    return this.#lifecycle.enqueue(withJsonOutputSchema(input), options);
  }

  /** Checks a run's request as `enqueue` would, writing nothing: a schedule's options are refused when it is made, not at each tick. */
  checkRequest(input: LibraryRunRequest): void {
    this.#lifecycle.checkRequest(withJsonOutputSchema(input));
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

  /**
   * Forks a run from one of its subtasks or checkpoints onto a new thread (`troupe runs fork`):
   * the results upstream of the fork point are kept — no model or tool call is repeated for
   * them —, the rest runs. The original run is untouched.
   */
  fork(runId: string, request: ForkRequest, options: RunOptions = {}): Promise<RunResult> {
    return this.#lifecycle.fork(runId, parseForkRequest(request), options);
  }

  /** Forks a run and queues the fork (the server). */
  enqueueFork(runId: string, request: ForkRequest, options: { owner?: string } = {}): Promise<RunRecord> {
    return this.#lifecycle.enqueueFork(runId, parseForkRequest(request), options);
  }

  /** A thread's checkpoints, oldest first, each with what it followed (`troupe runs history`). */
  history(threadId: string): Promise<HistoryEntry[]> {
    return threadHistory(this.graph, threadId);
  }

  /**
   * Sends a run's webhook deliveries that are due, once, now (the CLI before it exits: nothing else
   * may be running to send them); what fails stays in the outbox for `troupe serve` to retry.
   */
  async sendWebhooks(runId: string): Promise<void> {
    const sender = new WebhookSender({ store: this.store, config: this.config.webhooks });
    try {
      for (const delivery of await this.store.webhooks.forRun(runId)) if (delivery.status === "pending") await sender.attempt(delivery.id);
    } finally {
      await sender.stop();
    }
  }

  /** Collects finished runs older than the cutoff, with their checkpoints, events and stash values (see retention.ts). */
  gc(options: GcOptions): Promise<GcReport> {
    return collectGarbage({ store: this.store, graph: this.graph }, options);
  }

  /** Deletes one finished run (`troupe runs delete`); `owner` must own it when given. */
  deleteRun(runId: string, options: { owner?: string } = {}): Promise<GcReport> {
    return deleteRun({ store: this.store, graph: this.graph }, runId, options);
  }

  /** Deletes a thread: its runs (all stopped) and its checkpoints. */
  deleteThread(threadId: string, options: { owner?: string } = {}): Promise<GcReport> {
    return deleteThread({ store: this.store, graph: this.graph }, threadId, options);
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
  /**
   * Whether a workspace file is untrusted, and why (`troupe trust show`): judged as a read would
   * judge it, with what troupe recorded of it in the store.
   */
  async explainFile(requested: string): Promise<FileTrustReport> {
    const files = this.tools.trust?.files ?? new TrustPolicy(this.config.trust ?? {}, { fileLabels: this.store.fileLabels }).files;
    // As the local user's runs would judge it (a trusted label vouches only to the runs of whoever made the file).
    return fileTrustReport(files, this.workspace, requested, { store: this.store.fileLabels, owner: memoryNamespaceFor(undefined).join("/") });
  }

  async callTool(name: string, args: unknown, options: { agent?: string; signal?: AbortSignal; principal?: string } = {}): Promise<ToolOutcome> {
    if (options.agent !== undefined && options.agent !== OPERATOR && !this.agents.get(options.agent)) {
      throw new InputError("unknown_agent", `unknown agent "${options.agent}"; agents: ${this.agents.names().join(", ")}`);
    }
    return this.tools.call(name, args, {
      workspace: this.workspace,
      agent: options.agent ?? OPERATOR,
      // Whose call it is: the memory tools' namespace, and the owner of the labels of the files it writes.
      memoryNamespace: memoryNamespaceFor(options.principal),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.principal !== undefined ? { principal: options.principal } : {}),
    });
  }

  /**
   * A collaborative decision: the voters (agents in their roles, models, or samples of the
   * critic's model; see `resolveVoters`) each vote for one of the options with a confidence and a
   * reason, and the (weighted) share of the leading option is compared with the threshold (the
   * request's, the config's `decide.threshold`, else 0.6). A tie or a share below it is no
   * decision. The offline model abstains: it cannot judge an open question.
   */
  async decide(input: DecideRequestInput, options: { signal?: AbortSignal } = {}): Promise<Decision> {
    const request = parseDecideRequest(input);
    const voters = resolveVoters(request, {
      agents: this.agents,
      models: this.models,
      config: this.config,
      resolved: this.#resolved,
      routeOf: (model) => this.#routeOf(model),
    });
    const threshold = request.threshold ?? this.config.decide?.threshold ?? LIMITS.consensusThreshold;
    return decide({ question: request.question, options: request.options, voters, threshold, ...(options.signal ? { signal: options.signal } : {}) });
  }

  /** The route of a model named by `provider:model` for a voter: one the instance made, or one made now. */
  #routeOf(model: string): ModelRoute | undefined {
    const known = this.#resolved[model] ?? model;
    if (this.models.extra?.[known]) return routeForModel(this.models, known, "critic");
    if (!this.#providers) return undefined;
    try {
      const choice = this.#providers.resolve(model, undefined, this.models.choice.critic.provider);
      const made = this.#providers.createModelSet({ main: choice, extra: [choice] }, this.env, { settings: this.config.providers ?? {}, prices: this.config.prices ?? {}, policy: callPolicyOf(this.env, this.config) });
      return routeForModel(made, `${choice.provider}:${choice.model}`, "critic");
    } catch (error) {
      throw new InputError("unknown_voter", `voter "${model}": ${errorMessage(error)}`);
    }
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
