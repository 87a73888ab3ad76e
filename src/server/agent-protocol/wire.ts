import { z } from "zod";
import { AGENT_THREAD_SORTS, AGENT_THREAD_STATUSES } from "../../store/index.js";
import { AgentProtocolRunSettings, ThreadId } from "../run-request-wire.js";

/**
 * The Agent Protocol's request shapes as `@langchain/langgraph-sdk` 1.x sends them (snake_case),
 * and its answers' shapes for /openapi.json. Requests keep the fields the SDK sends and drop the
 * ones a newer SDK may add; a field troupe cannot honour is refused by name where it is read
 * (`agent_protocol_unsupported`), never ignored when it asks for something.
 */

/** Stream modes the SDK knows: troupe answers `values`, `updates`, `messages-tuple`, `messages`, `custom` and `events`; the others are taken and send nothing. */
export const STREAM_MODES = ["values", "updates", "messages", "messages-tuple", "events", "custom", "debug", "tasks", "checkpoints", "tools"] as const;
export type StreamMode = (typeof STREAM_MODES)[number];
export const StreamModes = z
  .union([z.enum(STREAM_MODES), z.array(z.enum(STREAM_MODES)).max(STREAM_MODES.length)], {
    error: `stream_mode must be one or more of ${STREAM_MODES.join(", ")}`,
  })
  .describe(`what to stream: ${STREAM_MODES.join(", ")} (default values)`);

const JSON_LIMIT_BYTES = 16 * 1024;
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");

/** Metadata a client keeps on a thread or a run: a JSON object of at most 16 KiB and 64 keys. */
export const Metadata = z
  .record(z.string().min(1).max(128), z.unknown())
  .refine((value) => Object.keys(value).length <= 64, { error: "metadata holds at most 64 keys" })
  .refine((value) => jsonBytes(value) <= JSON_LIMIT_BYTES, { error: `metadata is at most ${JSON_LIMIT_BYTES / 1024} KiB of JSON` });

/** A metadata filter: each key's value equal; keys of letters, digits, '_', '-', ':' or '.'. */
export const MetadataFilter = z
  .record(z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, { error: "a metadata key to filter on is 1-64 letters, digits, '_', '-', ':' or '.'" }), z.unknown())
  .refine((value) => Object.keys(value).length <= 16, { error: "filter on at most 16 metadata keys" })
  .refine((value) => jsonBytes(value) <= JSON_LIMIT_BYTES, { error: `a metadata filter is at most ${JSON_LIMIT_BYTES / 1024} KiB of JSON` });

/** A message as LangChain serialises it, or the text alone. */
const MessageLike = z.union([
  z.string(),
  z.looseObject({
    type: z.string().max(64).optional(),
    role: z.string().max(64).optional(),
    content: z.union([z.string(), z.array(z.unknown()).max(200)]),
    id: z.string().max(200).optional(),
  }),
]);

/** A run's input: the task (or LangChain messages, the last human one being the task) and what the planner should know. */
export const RunInput = z
  .object({
    task: z.string().optional().describe("what to do, in words (1-5,000 characters)"),
    messages: z.union([MessageLike, z.array(MessageLike).max(1_000)]).optional().describe("LangChain messages: the last human (user) message's text is the task"),
    context: z.union([z.string(), z.record(z.string(), z.unknown())]).optional().describe("what the planner should know (at most 10 KB)"),
  })
  .strict();
export type RunInput = z.infer<typeof RunInput>;

/** troupe's run settings, where LangGraph keeps a run's context (`context`, or `config.configurable`). */
export const RunSettings = AgentProtocolRunSettings;
export type RunSettings = z.infer<typeof RunSettings>;

export const Command = z
  .object({
    resume: z.unknown().optional().describe("the answer to what the run waits for (see docs/agent-chat-ui.md)"),
    goto: z.unknown().optional().describe('"__end__": stop the waiting run'),
    update: z.unknown().optional(),
  })
  .strict();
export type Command = z.infer<typeof Command>;

export const RunCreate = z.object({
  assistant_id: z.string().min(1).max(200).describe("troupe, or its assistant id"),
  input: RunInput.nullish(),
  command: Command.nullish(),
  config: z.looseObject({ configurable: z.record(z.string(), z.unknown()).optional() }).nullish(),
  context: z.record(z.string(), z.unknown()).nullish().describe(`troupe's run settings: ${Object.keys(AgentProtocolRunSettings.shape).join(", ")}`),
  metadata: Metadata.nullish(),
  stream_mode: StreamModes.nullish(),
  stream_subgraphs: z.boolean().nullish(),
  stream_resumable: z.boolean().nullish(),
  feedback_keys: z.union([z.string(), z.array(z.string())]).nullish(),
  interrupt_before: z.union([z.literal("*"), z.array(z.string())]).nullish(),
  interrupt_after: z.union([z.literal("*"), z.array(z.string())]).nullish(),
  checkpoint: z.record(z.string(), z.unknown()).nullish(),
  checkpoint_id: z.string().nullish(),
  webhook: z.string().max(2_000).nullish(),
  strict_resume: z.boolean().nullish(),
  multitask_strategy: z.enum(["reject", "interrupt", "rollback", "enqueue"]).nullish(),
  on_completion: z.enum(["delete", "keep"]).nullish(),
  on_disconnect: z.enum(["cancel", "continue"]).nullish(),
  after_seconds: z.number().nullish(),
  if_not_exists: z.enum(["create", "reject"]).nullish(),
  checkpoint_during: z.boolean().nullish(),
  durability: z.string().nullish(),
  langsmith_tracer: z.unknown().optional(),
});
export type RunCreate = z.infer<typeof RunCreate>;

export const ThreadCreate = z.object({
  thread_id: ThreadId.nullish().describe("the thread's name (default: a new UUID)"),
  metadata: Metadata.nullish(),
  if_exists: z.enum(["raise", "do_nothing"]).nullish(),
  supersteps: z.unknown().optional(),
  ttl: z.unknown().optional(),
});

export const ThreadPatch = z.object({ metadata: Metadata.nullish(), ttl: z.unknown().optional() });

export const ThreadSearch = z.object({
  metadata: MetadataFilter.nullish(),
  ids: z.array(ThreadId).max(1_000).nullish(),
  limit: z.number().int().min(1).max(1_000).nullish(),
  offset: z.number().int().min(0).max(1_000_000).nullish(),
  status: z.enum(AGENT_THREAD_STATUSES).nullish(),
  sort_by: z.enum(AGENT_THREAD_SORTS).nullish(),
  sort_order: z.enum(["asc", "desc"]).nullish(),
  select: z.array(z.string().max(64)).max(20).nullish(),
  values: z.record(z.string(), z.unknown()).nullish(),
  extract: z.unknown().optional(),
});
export type ThreadSearch = z.infer<typeof ThreadSearch>;

export const ThreadCount = ThreadSearch.pick({ metadata: true, status: true, values: true });

export const ThreadParams = z.object({ thread_id: ThreadId });
export const RunParams = z.object({ thread_id: ThreadId, run_id: z.string().min(1).max(200) });
export const CheckpointParams = z.object({ thread_id: ThreadId, checkpoint_id: z.string().min(1).max(200) });
export const AssistantParams = z.object({ assistant_id: z.string().min(1).max(200) });

const CheckpointRef = z.looseObject({ checkpoint_id: z.string().max(200).nullish(), checkpoint_ns: z.string().max(200).nullish() });

export const StateQuery = z.object({ subgraphs: z.unknown().optional(), select: z.unknown().optional() });
export const StateAt = z.object({ checkpoint: CheckpointRef, subgraphs: z.boolean().nullish(), select: z.unknown().optional() });

export const HistoryRequest = z.object({
  limit: z.number().int().min(1).max(1_000).nullish(),
  /** A checkpoint id, a checkpoint, or (as the SDK types it) a config naming one. */
  before: z.union([z.string().max(200), z.looseObject({ configurable: CheckpointRef }), CheckpointRef]).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  checkpoint: CheckpointRef.nullish(),
  select: z.unknown().optional(),
});
export type HistoryRequest = z.infer<typeof HistoryRequest>;

const flag = z.enum(["0", "1", "true", "false"]).transform((value) => value === "1" || value === "true");

export const CancelQuery = z.object({ wait: flag.optional(), action: z.enum(["interrupt", "rollback"]).optional(), reason: z.string().max(1_000).optional() });
export const JoinQuery = z.object({ cancel_on_disconnect: flag.optional() });
export const JoinStreamQuery = z.object({
  cancel_on_disconnect: flag.optional(),
  stream_mode: z.union([z.enum(STREAM_MODES), z.array(z.enum(STREAM_MODES)).max(STREAM_MODES.length)]).optional(),
  namespace: z.unknown().optional(),
  checkpoint_id: z.string().max(200).optional(),
});
export const RunListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1_000).optional(),
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
  status: z.enum(["pending", "running", "error", "success", "timeout", "interrupted"]).optional(),
  select: z.unknown().optional(),
});

export const AssistantSearch = z.object({
  graph_id: z.string().max(200).nullish(),
  name: z.string().max(200).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  limit: z.number().int().min(1).max(1_000).nullish(),
  offset: z.number().int().min(0).nullish(),
  sort_by: z.string().max(64).nullish(),
  sort_order: z.enum(["asc", "desc"]).nullish(),
  select: z.array(z.string().max(64)).max(20).nullish(),
});
export const AssistantCount = AssistantSearch.pick({ graph_id: true, name: true, metadata: true });
export const AssistantVersions = z.object({ metadata: z.record(z.string(), z.unknown()).nullish(), limit: z.number().int().min(1).max(1_000).nullish(), offset: z.number().int().min(0).nullish() });

/** A namespace label: 1-128 characters, none of them '.', ':' or NUL (LangGraph's store refuses those). */
export const Label = z
  .string()
  .min(1, { error: "a namespace label is not empty" })
  .max(128, { error: "a namespace label is at most 128 characters" })
  .regex(/^[^.:\0]*$/, { error: "a namespace label holds no '.', ':' or NUL" });
/** A namespace: 1-10 labels. */
export const Namespace = z.array(Label, { error: "a namespace is a list of labels" }).min(1, { error: "a namespace has at least one label" }).max(10, { error: "a namespace has at most 10 labels" });
const NamespacePrefix = z.array(Label).max(10, { error: "a namespace has at most 10 labels" });

export const StorePut = z
  .object({
    namespace: Namespace,
    key: z.string().min(1).max(200),
    value: z.record(z.string(), z.unknown(), { error: "an item's value is a JSON object" }),
    index: z.union([z.literal(false), z.array(z.string().min(1).max(200)).max(20)]).nullish(),
    ttl: z.number().positive().max(10 * 365 * 24 * 60).nullish().describe("minutes until the item expires"),
  })
  .strict();
export const StoreDelete = z.object({ namespace: Namespace, key: z.string().min(1).max(200) }).strict();
export const StoreGet = z.object({ namespace: z.string().min(1).max(1_300), key: z.string().min(1).max(200), refresh_ttl: z.unknown().optional() }).strict();
export const StoreSearch = z
  .object({
    namespace_prefix: NamespacePrefix.nullish(),
    filter: z.record(z.string(), z.unknown()).nullish(),
    limit: z.number().int().min(1).max(1_000).nullish(),
    offset: z.number().int().min(0).max(100_000).nullish(),
    query: z.string().max(1_000).nullish(),
    refresh_ttl: z.boolean().nullish(),
  })
  .strict();
export const StoreNamespaces = z
  .object({
    prefix: NamespacePrefix.nullish(),
    suffix: NamespacePrefix.nullish(),
    max_depth: z.number().int().min(1).max(10).nullish(),
    limit: z.number().int().min(1).max(1_000).nullish(),
    offset: z.number().int().min(0).max(100_000).nullish(),
  })
  .strict();

// Answers, for /openapi.json.

const Iso = z.string().describe("ISO 8601");
const Json = z.record(z.string(), z.unknown());

export const ProtocolError = z.object({
  code: z.string().describe("a stable error code (docs/errors.md)"),
  message: z.string().describe("what went wrong, in a sentence"),
  metadata: Json.nullable().describe("details: the field, the limit, the issues"),
});

export const Interrupt = z.object({ id: z.string(), value: Json, when: z.literal("during").optional() });

export const ThreadView = z.object({
  thread_id: z.string(),
  created_at: Iso,
  updated_at: Iso,
  state_updated_at: Iso,
  metadata: Json,
  status: z.enum(AGENT_THREAD_STATUSES),
  values: Json.describe("messages, task, plan, results, answer, run_id, status, stop_reason"),
  interrupts: z.record(z.string(), z.array(Interrupt)),
  config: Json,
  error: z.string().nullable(),
});

const Checkpoint = z.object({ thread_id: z.string(), checkpoint_ns: z.string(), checkpoint_id: z.string().nullable(), checkpoint_map: Json.nullable() });

export const ThreadStateView = z.object({
  values: Json,
  next: z.array(z.string()),
  tasks: z.array(z.object({ id: z.string(), name: z.string(), error: z.string().nullable(), interrupts: z.array(Interrupt), checkpoint: Checkpoint.nullable(), state: z.null() })),
  checkpoint: Checkpoint,
  metadata: Json,
  created_at: Iso.nullable(),
  parent_checkpoint: Checkpoint.nullable(),
  interrupts: z.array(Interrupt),
});

export const RunView = z.object({
  run_id: z.string(),
  thread_id: z.string(),
  assistant_id: z.string(),
  created_at: Iso,
  updated_at: Iso,
  status: z.enum(["pending", "running", "error", "success", "timeout", "interrupted"]),
  metadata: Json,
  multitask_strategy: z.string().nullable(),
  kwargs: Json,
});

export const AssistantView = z.object({
  assistant_id: z.string(),
  graph_id: z.string(),
  name: z.string(),
  description: z.string(),
  config: Json,
  context: Json,
  metadata: Json,
  version: z.number(),
  created_at: Iso,
  updated_at: Iso,
});

export const ItemView = z.object({ namespace: z.array(z.string()), key: z.string(), value: Json, created_at: Iso, updated_at: Iso, score: z.number().nullable().optional() });
