import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { FileLabelStore } from "../core/file-labels.js";
import type { McpCredentialStore } from "../core/mcp-credentials.js";
import type { RemoteTasks } from "../core/remote-tasks.js";
import type { AgentProtocolStore } from "./agent-protocol/contract.js";
import type { AuditStore } from "./audit/contract.js";
import type { EvalStore } from "./evals/contract.js";
import type { EventStore } from "./events/contract.js";
import type { GrantStore } from "./grants/contract.js";
import type { ThreadLocks } from "./locks/contract.js";
import type { TroupeMemoryStore } from "./memory/contract.js";
import type { Memories, MemorySetup } from "./memory/memories.js";
import type { ControlChannel, RunQueue, WorkerRegistry } from "./queue/contract.js";
import type { RetentionStore } from "./retention/contract.js";
import type { RunStore } from "./runs/contract.js";
import type { ScheduleStore } from "./schedules/contract.js";
import type { StashStore } from "./stash/contract.js";
import type { RunStatsStore } from "./stats/contract.js";
import type { WebhookOutbox } from "./webhooks/contract.js";

/**
 * Everything a troupe instance keeps — checkpoints, runs, events, the data stash, the audit
 * trail, evals — behind one interface with two implementations: SQLite in the data directory
 * (the embedded default: one process) and Postgres (`TROUPE_DATABASE_URL`: any number of API
 * and worker processes, with a run queue shared between them). Both pass the store contract
 * suite (test/store-contract/).
 */
export interface Store {
  readonly kind: "sqlite" | "postgres";
  /** The data directory: SQLite's database, and local files (eval workspaces) on either backend. */
  readonly directory: string;
  /** Where the database is, for messages: the SQLite file, or the Postgres URL without its password. */
  readonly location: string;
  readonly checkpointer: BaseCheckpointSaver;
  readonly runs: RunStore;
  readonly events: EventStore;
  readonly stash: StashStore;
  readonly audit: AuditStore;
  readonly evals: EvalStore;
  readonly threads: ThreadLocks;
  /** The long-term memory: a LangGraph BaseStore, and troupe's facts over it. */
  readonly memoryStore: TroupeMemoryStore;
  readonly memories: Memories;
  /** The tasks remote A2A agents made for troupe's calls, by call id (a crash mid-call waits on the same task again). */
  readonly remoteTasks: RemoteTasks;
  /** MCP servers' OAuth credentials, sealed with troupe's secret key (src/store/secrets/secret-box.ts). */
  readonly mcpCredentials: McpCredentialStore;
  /** The labels of files troupe wrote, copied, moved or extracted, by content and identity (docs/trust.md). */
  readonly fileLabels: FileLabelStore;
  /** The run queue shared by every process (Postgres); undefined on SQLite, where a server queues in memory. */
  readonly queue?: RunQueue;
  /** The queue a server's dispatcher takes runs from: the shared one (Postgres), or this process's own (SQLite). */
  readonly runQueue: RunQueue;
  /** Messages to whichever process holds a run (cancel, drain): Postgres NOTIFY; undefined on SQLite. */
  readonly control?: ControlChannel;
  /** The worker processes sharing the store, with their heartbeats (Postgres). */
  readonly workers?: WorkerRegistry;
  /** Grants added and revoked at runtime (`troupe grants`). */
  readonly grants: GrantStore;
  /** The webhook outbox: a delivery per run event a webhook asked for, written with the run's change. */
  readonly webhooks: WebhookOutbox;
  /** Cron schedules and the ticks they fired. */
  readonly schedules: ScheduleStore;
  /** Reflection statistics and subtask durations, kept across runs. */
  readonly stats: RunStatsStore;
  /** The data side of retention (gc, runs delete). */
  readonly retention: RetentionStore;
  /** What the Agent Protocol keeps beside the runs: the threads made through it, and its runs' metadata. */
  readonly agentProtocol: AgentProtocolStore;
  /** Asks the database something trivial; rejects when it does not answer. */
  ping(): Promise<void>;
  /** Writes what is pending and closes every connection. */
  close(): Promise<void>;
}

export interface StoreOptions extends MemorySetup {
  /** The data directory (created when missing): SQLite's `troupe.db`, and local files. */
  dataDir: string;
  /** `postgres://…`: everything on Postgres instead of SQLite (TROUPE_DATABASE_URL). */
  databaseUrl?: string;
  /** Postgres: how long a worker's silence lasts before another takes its runs over (default 30 s). */
  leaseSeconds?: number;
  /** Postgres: the most connections of this process's pool (default 20). */
  poolSize?: number;
}

