import { userInfo } from "node:os";
import path from "node:path";
import { loadConfig, type TroupeConfig } from "../config/config-file.js";
import { type Env, parseEnv } from "../config/env.js";
import { NotFoundError, ToolError } from "../core/errors.js";
import { memoryNamespace } from "../core/memory.js";
import { parseStashRef } from "../core/stash.js";
import type { ProviderDefinition } from "../providers/provider.js";
import { databaseExists, type Memories, type MemoryIndexConfig, type MemorySetup, openStore, type Store } from "../store/index.js";
import type { ThreadResults } from "../tools/builtin/thread-result.js";
import { callPolicyOf, registryFor } from "./model-selection.js";

let userName: string | undefined;

/** The name of the person running this process (the CLI's memory belongs to them), looked up once: each run asks, and a lookup reads the password database. */
export function localUserName(): string {
  userName ??= lookUpUserName();
  return userName;
}

function lookUpUserName(): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // No passwd entry for this uid (a container): fall back to the environment.
  }
  return process.env.USER ?? process.env.LOGNAME ?? process.env.USERNAME ?? "local";
}

/**
 * The long-term memory namespace of a run's or a call's owner: an API principal's own (the
 * server's runs and calls), else the local user's (the CLI and the library).
 */
export function memoryNamespaceFor(principal: string | null | undefined): string[] {
  return principal ? memoryNamespace({ kind: "key", name: principal }) : memoryNamespace({ kind: "user", name: localUserName() });
}

/** Earlier runs' results for `thread_result`: only a run of the same thread can be read. */
export function threadResultsOf(store: Pick<Store, "runs" | "stash">): ThreadResults {
  return {
    async read(threadId, handle) {
      const key = parseStashRef(handle);
      const run = await store.runs.get(key.runId);
      if (!run || run.threadId !== threadId) {
        throw new ToolError("not_in_thread", `${handle} is not a result of this conversation (thread ${threadId}); take handles from its Conversation section`, { handle });
      }
      return store.stash.read(handle);
    },
  };
}

/**
 * How the store's long-term memory is set up from the environment and the config file: its
 * limits, and the embeddings model of TROUPE_EMBEDDINGS or `memory.embeddings` (a bad one is a
 * ConfigError before anything opens).
 */
export function memoryStoreOptions(env: Env, config: TroupeConfig, providers: ProviderDefinition[] = [], index?: MemoryIndexConfig): MemorySetup {
  const spec = env.TROUPE_EMBEDDINGS ?? config.memory?.embeddings;
  const made =
    index ??
    (spec !== undefined
      ? registryFor(config, providers).createEmbeddings(spec, env, {
          settings: config.providers ?? {},
          timeoutMs: callPolicyOf(env, config).timeoutMs,
          source: env.TROUPE_EMBEDDINGS !== undefined ? "TROUPE_EMBEDDINGS" : "memory.embeddings",
        })
      : undefined);
  return {
    memory: {
      ...(made ? { index: made } : {}),
      ...(config.memory?.maxItems !== undefined ? { limits: { maxItemsPerNamespace: config.memory.maxItems } } : {}),
      ...(config.memory?.maxItemBytes !== undefined ? { maxItemBytes: config.memory.maxItemBytes } : {}),
    },
  };
}

/**
 * The long-term memory of an existing data directory (or of the Postgres database
 * `databaseUrl` / TROUPE_DATABASE_URL names), for `troupe memory`: a directory without a
 * database is an error (nothing was ever kept there), never an empty memory.
 */
export async function openMemory(options: { dataDir?: string; databaseUrl?: string; env?: Env; configFile?: string } = {}): Promise<{ memories: Memories; store: Store; close: () => Promise<void> }> {
  const env = options.env ?? parseEnv();
  const directory = options.dataDir ?? env.TROUPE_DATA_DIR;
  const databaseUrl = options.databaseUrl ?? env.TROUPE_DATABASE_URL;
  const { config } = await loadConfig(process.cwd(), options.configFile ?? env.TROUPE_CONFIG);
  const memory = memoryStoreOptions(env, config);
  if (!databaseUrl && !databaseExists(directory)) {
    throw new NotFoundError("database_missing", `there is no troupe database in ${path.resolve(directory)}, so no memory to read (check --data-dir or TROUPE_DATA_DIR)`, { path: path.resolve(directory) });
  }
  const store = await openStore({ dataDir: directory, ...memory, ...(databaseUrl ? { databaseUrl } : {}) });
  return { memories: store.memories, store, close: () => store.close() };
}
