import { z } from "zod";
import { Label } from "../core/provenance.js";
import { ExecutionGraph } from "../core/execution-graph.js";
import { LIMITS } from "../core/limits.js";
import { PlannedSubtask } from "../core/plan.js";
import { MEMORY_LIMITS, MemoryId, RETRIEVALS } from "../core/memory.js";
import { ANSWER_FORMATS, RUN_STATUSES, STOP_REASONS } from "../core/run.js";
import { DecideRequest, DecisionResult } from "../core/vote.js";
import { ExecuteBody, ForkRunOptions, ScheduleRunOptions, Task, ThreadId } from "./run-request-wire.js";

/**
 * The HTTP API's request and response shapes (snake_case, as in seed 001). Requests are parsed
 * with these; responses are described by them in /openapi.json and checked by the route tests.
 * A run's request (POST /execute and the other doors' subsets of it) is in run-request-wire.ts.
 */

export const PlanBody = z
  .object({
    task: Task,
    tools: ExecuteBody.shape.tools,
    context: ExecuteBody.shape.context,
  })
  .strict();
export type PlanBody = z.infer<typeof PlanBody>;

export const ResumeBody = z
  .object({
    decision: z.enum(["approve", "reject", "edit", "answer"]),
    feedback: z.string().max(LIMITS.contextMaxBytes).optional().describe("with reject: what to change (the plan or answer is made again)"),
    plan: z.array(PlannedSubtask).min(1).max(LIMITS.maxSubtasks).optional().describe("with edit at a plan approval: the plan to run instead"),
    answer: z.string().min(1).max(LIMITS.contextMaxBytes).optional().describe("with answer: the reply to a question; with edit at an answer approval: the answer to keep"),
    content: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]))
      .optional()
      .describe("with answer at an mcp-elicitation: the server's form filled in (its requestedSchema; {} accepts its defaults); reject declines it"),
    interrupt_id: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("which of the task's pending interrupts this answers (see interrupts in GET /tasks/:id; several tool calls may wait for approval at once); default: the first"),
  })
  .strict()
  .superRefine((body, context) => {
    if (body.decision === "answer" && body.answer === undefined && body.content === undefined) {
      context.addIssue({ code: "custom", path: ["answer"], message: "decision answer needs an answer", params: { code: "answer_required" } });
    }
    if (body.decision === "edit" && body.answer === undefined && body.plan === undefined) {
      context.addIssue({ code: "custom", path: ["plan"], message: "decision edit needs a plan or an answer", params: { code: "edit_required" } });
    }
  });
export type ResumeBody = z.infer<typeof ResumeBody>;

export const ToolCallBody = z
  .object({
    tool_name: z.string().min(1).max(64),
    parameters: z.record(z.string(), z.unknown()).default({}).describe("the tool's arguments (see GET /tools for each schema)"),
    agent: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe("call as this agent: its grants apply, and a high-risk tool is refused (approval_required) since no one can approve it here; default: the operator, who holds every level"),
  })
  .strict();
export type ToolCallBody = z.infer<typeof ToolCallBody>;

/** The deepest offset a task list takes: further back, pages go by cursor (an offset's cost grows with it). */
export const MAX_TASK_OFFSET = 10_000;

/** How far a task list counts: beyond it, `total` says "at least" (`total_exact: false`). */
export const TASK_COUNT_CAP = 10_000;

export const TaskListQuery = z
  .object({
    status: z.enum(RUN_STATUSES).optional(),
    thread_id: ThreadId.optional().describe("only the tasks of this thread (a conversation), still only the caller's"),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce
      .number()
      .int()
      .min(0)
      .max(MAX_TASK_OFFSET, { error: `offset is at most ${MAX_TASK_OFFSET}; page further back with cursor (each page's next_cursor)` })
      .default(0)
      .describe(`tasks to skip (at most ${MAX_TASK_OFFSET}); cursor pages at the same cost however deep`),
    cursor: z.string().min(1).max(200).optional().describe("the next_cursor of the page before: the page after it, whose cost does not grow with how deep it is"),
  })
  .strict()
  .refine((query) => query.cursor === undefined || query.offset === 0, { error: "send cursor or offset, not both", path: ["cursor"] });
export type TaskListQuery = z.infer<typeof TaskListQuery>;

export const GraphQuery = z.object({ format: z.enum(["json", "mermaid"]).default("json") }).strict();

export const EventsQuery = z
  .object({ after: z.coerce.number().int().min(0).optional().describe("replay events after this seq (same as Last-Event-ID)") })
  .strict();

export const TaskParams = z.object({ id: z.string().min(1).max(200) });

export const IdempotencyKey = z.string().regex(/^[\x21-\x7e]{1,255}$/, { error: "Idempotency-Key must be 1-255 visible ASCII characters" });

// Responses.

const Timestamp = z.string().describe("ISO 8601");
const Metrics = z.object({
  llmCalls: z.number(),
  toolCalls: z.number(),
  promptTokens: z.number(),
  completionTokens: z.number(),
  costUsd: z.number(),
  reflectionCount: z.number(),
  nodeVisits: z.number(),
  durationMs: z.number(),
  cachedPromptTokens: z.number().optional().describe("of the prompt tokens, those served from the providers' prompt caches"),
  cacheWriteTokens: z.number().optional().describe("of the prompt tokens, those written to a provider's cache"),
  reasoningTokens: z.number().optional().describe("of the completion tokens, those reasoning models thought with"),
});

export const SubtaskView = PlannedSubtask.extend({
  status: z.enum(["pending", "running", "done", "failed", "skipped"]),
  attempts: z.number(),
  summary: z.string().optional(),
  error: z.string().optional(),
  durationMs: z.number().optional(),
});

const INTERRUPT_KINDS = ["plan-approval", "answer-approval", "question", "tool-approval", "mcp-elicitation"] as const;

export const Interrupt = z.object({
  kind: z.enum(INTERRUPT_KINDS).describe(
    "what the task waits for: an approval of troupe's own (plan, answer, tool call), a question of its planner, or mcp-elicitation: a question an MCP server troupe calls put to a person (payload.message is the server's own untrusted text; payload.requestedSchema the form to answer)",
  ),
  payload: z.record(z.string(), z.unknown()),
});

export const PendingInterrupt = Interrupt.extend({
  id: z.string().describe("name it as interrupt_id in POST /tasks/:id/resume to answer this one"),
});

export const TaskAccepted = z.object({
  task_id: z.string(),
  thread_id: z.string(),
  status: z.enum(RUN_STATUSES),
});

export const TaskSummary = z.object({
  task_id: z.string(),
  thread_id: z.string(),
  task: z.string(),
  status: z.enum(RUN_STATUSES),
  stop_reason: z.enum(STOP_REASONS).nullable(),
  suspended: z.string().nullable().describe("why a run stopped without asking a person (shutdown); it resumes when the server starts"),
  created_at: Timestamp,
  started_at: Timestamp.nullable(),
  updated_at: Timestamp,
  finished_at: Timestamp.nullable(),
});
export type TaskSummary = z.infer<typeof TaskSummary>;

const RecalledMemories = z.object({
  retrieval: z.enum(RETRIEVALS).nullable().describe("lexical (BM25 over the words), or hybrid with an embeddings model; null when the store could not be read"),
  items: z.array(
    z.object({
      id: z.string(),
      text: z.string(),
      score: z.number(),
      untrusted: z.string().optional().describe("the sources of a fact saved from untrusted data: the planner was given its id only"),
    }),
  ),
  error: z.string().optional().describe("why the store could not be read"),
});

const AnswerFormat = z
  .enum(ANSWER_FORMATS)
  .nullable()
  .describe("how the answer is meant to be read: markdown (a language model's) or text (written by rules or code — the offline model's, a tool's result, JSON — shown as it is); null for a run recorded before troupe kept it");

/** Where a fork started: the task it re-runs, and from which checkpoint and subtask. */
const ForkOriginView = z.object({ task_id: z.string(), thread_id: z.string(), checkpoint_id: z.string(), subtask_id: z.string().nullable() });

export const TaskView = TaskSummary.extend({
  progress: z.object({
    subtasks_total: z.number(),
    subtasks_done: z.number(),
    subtasks_failed: z.number(),
    subtasks_skipped: z.number(),
    subtasks_running: z.number(),
    current_step: z.string().describe("queued, planning, running s1, s2, reviewing, answering, waiting for plan-approval, completed, …"),
  }),
  interrupt: Interrupt.nullable().describe("what the run waits for, when status is interrupted (the first of interrupts: what a decision answers by default)"),
  interrupts: z.array(PendingInterrupt).describe("everything the run waits for, each with its id (several tool calls may wait for approval at once)"),
  plan: z.array(SubtaskView),
  result: z
    .object({ answer: z.string().nullable(), answer_format: AnswerFormat, output: z.unknown().optional().describe("with an output_schema: the answer as JSON, valid against it") })
    .nullable()
    .describe("set once the run has finished"),
  error: z.string().nullable(),
  metrics: Metrics.nullable(),
  request: z.object({
    tools: z.array(z.string()).nullable(),
    max_iterations: z.number(),
    approve_plan: z.boolean(),
    approve_answer: z.boolean(),
  }),
  conversation: z
    .array(z.object({ task_id: z.string(), task: z.string(), status: z.enum(RUN_STATUSES), answer: z.string().nullable(), answer_format: AnswerFormat }))
    .describe("the earlier runs of the task's thread, oldest first (at most 50; answers cut to 1,000 characters): the conversation this run continues"),
  memories: RecalledMemories.nullable().describe("the long-term memories given to the planner, and how they were found; null before the run started"),
  forked_from: ForkOriginView.nullable().describe("the task this one re-runs (a fork: troupe runs fork, POST /tasks/:id/fork, the console's Re-run from here) and where it started from; null for a task run from its words"),
});
export type TaskView = z.infer<typeof TaskView>;

export const TaskList = z.object({
  items: z.array(TaskSummary),
  total: z.number().describe(`the tasks matching, counted up to ${TASK_COUNT_CAP}`),
  total_exact: z.boolean().describe(`false when more than ${TASK_COUNT_CAP} match: total is then a lower bound`),
  limit: z.number(),
  offset: z.number(),
  next_offset: z.number().nullable().describe(`the offset of the next page (null after the last, or past ${MAX_TASK_OFFSET}: use next_cursor)`),
  next_cursor: z.string().nullable().describe("the cursor of the next page (null after the last)"),
});

/** The execution graph, as `troupe runs show --json` gives it (the renderer in core/execution-graph.ts). */
export const TaskGraph = ExecutionGraph;
export const TaskGraphMermaid = z.object({ format: z.literal("mermaid"), mermaid: z.string() });

export const PlanResult = z.object({
  task: z.string(),
  subtasks: z.array(PlannedSubtask),
  total_subtasks: z.number(),
  depth: z.number().describe("the longest chain of dependencies (waves of parallel work)"),
  question: z.string().nullable().describe("set when the planner needs a person's answer instead"),
  answer: z.string().nullable().describe("the plan's answer template: the answer with {s1} / {s1.field} where results go, filled by code once they are verified (no synthesizer call); null when a model is to word the answer"),
  notes: z.array(z.string()).describe("dependencies added because two subtasks use the same workspace path, one sentence each (as a run's plan-ready notes)"),
  graph: TaskGraph,
  estimates: z
    .object({
      steps: z.array(
        z.object({
          subtask_id: z.string(),
          estimated_ms: z.number(),
          basis: z.enum(["recorded", "default"]).describe("recorded: the mean of earlier subtasks of the same agent and tool; default: 1 s for a direct tool step, 5 s for a worker"),
          samples: z.number(),
        }),
      ),
      estimated_total_ms: z.number().describe("the longest chain of dependencies by the estimates (independent subtasks run side by side)"),
      estimated_work_ms: z.number().describe("every step's estimate added up"),
    })
    .describe("how long the plan should take, from the durations recorded in earlier runs"),
});

export const ToolInfo = z.object({
  name: z.string(),
  description: z.string(),
  permission: z.string().describe("the level a caller needs: NONE, READ, WRITE, EXECUTE or ADMIN"),
  risk_level: z.string(),
  needs_approval: z.boolean().describe("whether an agent's call waits for a person's approval"),
  idempotent: z.boolean(),
  timeout_ms: z.number(),
  source: z.string().describe("builtin, or the MCP server it comes from"),
  agents: z.array(z.string()).describe("the agents whose grants reach it"),
  parameters: z.record(z.string(), z.unknown()).describe("JSON schema of the arguments"),
});
export const ToolList = z.object({ tools: z.array(ToolInfo), count: z.number() });

export const ToolCallResult = z.object({
  tool_name: z.string(),
  success: z.boolean(),
  result: z.unknown(),
  summary: z.string().nullable(),
  duration_ms: z.number(),
});

const Probe = z.object({ ok: z.boolean(), latency_ms: z.number(), error: z.string().optional() });

export const WorkerView = z.object({
  id: z.string(),
  host: z.string(),
  pid: z.number(),
  concurrency: z.number().describe("runs it drives at once, at most"),
  runs_held: z.number(),
  lease_takeovers: z.number().describe("runs it took over from a worker that died"),
  draining: z.boolean(),
  alive: z.boolean().describe("heard from within the lease"),
  started_at: z.string(),
  heartbeat_at: z.string(),
});

export const Health = z.object({
  status: z.enum(["ok", "unavailable"]),
  live: z.boolean(),
  ready: z.boolean(),
  /** Why it is not ready: database_unreachable, queue_unreachable, shutting_down. */
  code: z.string().optional(),
  backend: z.enum(["sqlite", "postgres"]),
  checks: z.object({
    database: Probe,
    queue: Probe.extend({ depth: z.number().optional().describe("runs waiting for a worker") }).optional().describe("the shared run queue (Postgres)"),
    accepting: z.boolean().describe("false while the server shuts down"),
  }),
  tasks: z.object({ running: z.number(), queued: z.number(), max_running: z.number(), workers: z.number().describe("runs this process drives at once (0: API only)") }),
  workers: z.array(WorkerView).optional().describe("the worker processes sharing the database (Postgres)"),
});

// Evals (issue 13): a suite of cases run like `troupe eval`.

/** Cases one eval submitted over HTTP may hold, and how many of them run at once. */
export const EVAL_HTTP_LIMITS = { maxCases: 100, concurrencyDefault: 2, concurrencyMax: 8 } as const;

export const EvalBody = z
  .object({
    suite: z
      .union([z.string().min(1), z.array(z.unknown()).min(1)], { error: "suite must be JSON Lines text (one case a line) or an array of cases" })
      .describe(`the cases, as in a suite file: JSON Lines text, or an array of { id, task, files?, expect? } (at most ${EVAL_HTTP_LIMITS.maxCases}; each task 1-5,000 characters)`),
    name: z.string().min(1).max(200).optional().describe("a name for the suite (default: suite)"),
    concurrency: z.number().int().min(1).max(EVAL_HTTP_LIMITS.concurrencyMax).optional().describe(`cases run at once, 1-${EVAL_HTTP_LIMITS.concurrencyMax} (default ${EVAL_HTTP_LIMITS.concurrencyDefault})`),
    min_pass_rate: z.number().min(0).max(1).optional().describe("the pass rate the eval must reach, 0-1 (default 1)"),
  })
  .strict();
export type EvalBody = z.infer<typeof EvalBody>;

export const EvalListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();
export type EvalListQuery = z.infer<typeof EvalListQuery>;

export const EVAL_STATUS_VALUES = ["queued", "running", "completed", "failed", "cancelled"] as const;

export const EvalAccepted = z.object({
  eval_id: z.string(),
  name: z.string(),
  status: z.enum(EVAL_STATUS_VALUES),
  total: z.number(),
});

export const EvalSummary = z.object({
  eval_id: z.string(),
  name: z.string(),
  status: z.enum(EVAL_STATUS_VALUES).describe("completed once every case ran (meets_min_pass_rate says how well); failed when it could not run; cancelled"),
  provider: z.string(),
  total: z.number(),
  passed: z.number(),
  failed: z.number(),
  pass_rate: z.number().describe("passed / total, 0-1"),
  min_pass_rate: z.number(),
  meets_min_pass_rate: z.boolean(),
  created_at: Timestamp,
  finished_at: Timestamp.nullable(),
});
export type EvalSummary = z.infer<typeof EvalSummary>;

const Failure = z.object({ expectation: z.string(), message: z.string() });

export const EvalCaseView = z.object({
  id: z.string(),
  task: z.string(),
  state: z.enum(["pending", "running", "passed", "failed"]),
  run_id: z.string().nullable().describe("the case's run: GET /tasks/{run_id} opens it"),
  status: z.string().nullable().describe("the run's status"),
  failures: z.array(Failure),
  judge: z.record(z.string(), z.unknown()).nullable().describe("the judge's score and reason, or why it did not judge (the offline model never does)"),
  metrics: Metrics.nullable(),
  duration_ms: z.number().nullable(),
});
export type EvalCaseView = z.infer<typeof EvalCaseView>;

export const EvalView = EvalSummary.extend({
  cases: z.array(EvalCaseView),
  error: z.string().nullable(),
  results: z.record(z.string(), z.unknown()).nullable().describe("the results as `troupe eval --json` prints them, once the eval has finished"),
});
export type EvalView = z.infer<typeof EvalView>;

export const EvalList = z.object({
  items: z.array(EvalSummary),
  total: z.number(),
  limit: z.number(),
  offset: z.number(),
  next_offset: z.number().nullable(),
});

/** POST /decide: a question, its options, and optionally the voters, the threshold and weights (as `troupe decide` takes them). */
export const DecideBody = DecideRequest;

/** What a decision came to: the decision (null for a tie, no consensus or no votes), the consensus, each vote and the counts. */
export const DecideResult = DecisionResult.extend({
  usage: z.object({ llmCalls: z.number(), promptTokens: z.number(), completionTokens: z.number(), costUsd: z.number() }).describe("the model calls the votes took"),
});
// Long-term memory (issue 14): the caller's facts, never another key's.

export const MemoryView = z.object({
  id: z.string(),
  text: z.string(),
  subject: z.string().nullable().describe("what the fact is about; a later fact about the same subject replaces it"),
  source_run: z.string().nullable().describe("the task that saved it (null: saved directly)"),
  created_at: Timestamp,
  updated_at: Timestamp,
  expires_at: Timestamp.nullable(),
  score: z.number().optional().describe("relevance to the query (higher is better), in a search"),
  label: Label.describe("where the fact came from: untrusted when a task saved it from untrusted content (a planner then sees only its id)"),
});
export type MemoryView = z.infer<typeof MemoryView>;

export const MemoryQuery = z
  .object({
    query: z.string().min(1).max(MEMORY_LIMITS.queryMaxChars).optional().describe("search for the facts most relevant to this; without it, the facts most recently updated first"),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce.number().int().min(0).default(0).describe("with a listing only"),
  })
  .strict();
export type MemoryQuery = z.infer<typeof MemoryQuery>;

export const MemoryList = z.object({
  items: z.array(MemoryView),
  total: z.number().describe("facts in the caller's memory (a listing), or results found (a search)"),
  limit: z.number(),
  offset: z.number(),
  next_offset: z.number().nullable(),
  query: z.string().nullable(),
  retrieval: z.enum(RETRIEVALS).nullable().describe("how a search ranked: lexical, or hybrid with an embeddings model; null for a listing"),
  note: z.string().optional(),
});

export const MemoryBody = z
  .object({
    text: z.string().min(1).max(65_536).describe(`the fact, a full sentence (at most ${MEMORY_LIMITS.itemMaxBytes} bytes unless the server's config says otherwise)`),
    subject: z.string().min(1).max(MEMORY_LIMITS.subjectMaxChars).optional().describe("what it is about; saving the same subject again updates the fact"),
    ttl_seconds: z.number().int().min(1).max(MEMORY_LIMITS.ttlMaxSeconds).optional().describe("forget it after this many seconds"),
  })
  .strict();
export type MemoryBody = z.infer<typeof MemoryBody>;

export const MemoryParams = z.object({ id: MemoryId });

export const MemorySaved = z.object({ memory: MemoryView, created: z.boolean().describe("false when a fact with the same subject was updated") });
export const MemoryForgotten = z.object({ id: z.string(), forgotten: z.literal(true) });

// Operating over time (issue 27): forks, history, retention.

export const ForkBody = z
  .object({
    from: z.string().min(1).max(200).describe("a subtask id (it and what depends on it run again) or a checkpoint id from the thread's history (what followed it runs again)"),
    plan: z.array(PlannedSubtask).min(1).max(LIMITS.maxSubtasks).optional().describe("a plan to run instead: subtasks whose definition changed run again, with everything downstream"),
    args: z.record(z.string(), z.record(z.string(), z.unknown())).optional().describe('arguments to replace, by subtask: {"s2": {"x": 5}} (those subtasks run again)'),
    thread_id: ForkRunOptions.shape.thread_id.describe("the fork's thread (default: a new one); it must hold nothing yet"),
  })
  .strict();
export type ForkBody = z.infer<typeof ForkBody>;

export const ForkAccepted = TaskAccepted.extend({
  forked_from: ForkOriginView,
});

export const HistoryEntryView = z.object({
  checkpoint_id: z.string(),
  parent_id: z.string().nullable(),
  created_at: z.string().nullable(),
  step: z.number(),
  source: z.string().describe("input (a run's start), loop (a superstep), update or fork (a fork's first state)"),
  task_id: z.string().nullable().describe("the run whose checkpoint it is"),
  after: z.string().describe("what it followed: the node that ran and what came of it"),
  ended: z.array(z.string()).describe("subtasks that ended in the superstep it closes"),
  next: z.array(z.string()).describe("the nodes that run next from it (none: the run had ended)"),
  waiting: z.array(z.string()).describe("what it waits for (interrupt kinds)"),
});
export const ThreadHistory = z.object({ thread_id: z.string(), checkpoints: z.array(HistoryEntryView) });

export const ThreadParams = z.object({ id: ThreadId });

export const DeletionReport = z.object({
  runs: z.number(),
  threads_deleted: z.number(),
  threads_pruned: z.number(),
  events: z.number(),
  stash_values: z.number(),
  webhook_deliveries: z.number(),
  bytes_before: z.number(),
  bytes_after: z.number(),
});

// Schedules and runtime grants (issue 27).

export const ScheduleBody = z
  .object({
    cron: z.string().min(1).max(200).describe('five fields: minute hour day-of-month month day-of-week ("0 9 * * 1-5")'),
    task: Task,
    name: z.string().min(1).max(64).optional().describe("a name to find and remove it by (default: its id)"),
    timezone: z.string().min(1).max(64).optional().describe("the time zone the cron is read in (default UTC)"),
    catch_up: z.enum(["skip", "once"]).optional().describe("a tick missed while no server ran: run once when one starts, or skip (default)"),
    ...ScheduleRunOptions.shape,
    thread_id: ScheduleRunOptions.shape.thread_id.describe("run each time on this thread (a conversation)"),
    on_busy: ScheduleRunOptions.shape.on_busy.describe("when the thread's run is still going at a tick (default enqueue)"),
  })
  .strict();
export type ScheduleBody = z.infer<typeof ScheduleBody>;

export const ScheduleView = z.object({
  id: z.string(),
  name: z.string(),
  cron: z.string(),
  timezone: z.string(),
  task: z.string(),
  thread_id: z.string().nullable(),
  on_busy: z.string().nullable(),
  catch_up: z.enum(["skip", "once"]),
  source: z.enum(["config", "cli", "api"]),
  last_tick: Timestamp.nullable(),
  last_fired_at: Timestamp.nullable(),
  last_task_id: z.string().nullable(),
  next_tick: Timestamp.nullable(),
});
export const ScheduleList = z.object({ items: z.array(ScheduleView), total: z.number() });
export const ScheduleParams = z.object({ id: z.string().min(1).max(64) });

export const GrantBody = z
  .object({
    agent: z.string().min(1).max(64),
    tool: z.string().min(1).max(128).describe("a tool name, or a pattern with * (file_*, docs.*)"),
    level: z.enum(["NONE", "READ", "WRITE", "EXECUTE", "ADMIN"]),
    conditions: z.record(z.string(), z.unknown()).optional().describe("argument constraints and a time window, as in the config file's grants"),
    expires_at: z.union([z.iso.datetime({ offset: true }), z.number().int().positive()]).optional().describe("when it ends (ISO 8601, or ms since the epoch)"),
    reason: z.string().max(500).optional(),
  })
  .strict();
export type GrantBody = z.infer<typeof GrantBody>;

export const GrantView = z.object({
  id: z.string().nullable().describe("a runtime grant's id (revoke it by this); null for the config's and the roles'"),
  source: z.enum(["runtime", "config", "role"]),
  agent: z.string(),
  tool: z.string(),
  level: z.string(),
  conditions: z.record(z.string(), z.unknown()).nullable(),
  expires_at: Timestamp.nullable(),
  granted_by: z.string(),
  created_at: Timestamp.nullable(),
  reason: z.string().nullable(),
  revoked_at: Timestamp.nullable(),
  revoked_by: z.string().nullable(),
  revoke_reason: z.string().nullable(),
  live: z.boolean().describe("in force now: not revoked, not expired"),
});
export const GrantList = z.object({ items: z.array(GrantView), total: z.number() });
export const GrantParams = z.object({ id: z.string().min(1).max(64) });
export const GrantListQuery = z.object({ agent: z.string().min(1).max(64).optional(), all: z.enum(["true", "false"]).optional() }).strict();
export const RevokeQuery = z.object({ reason: z.string().max(500).optional() }).strict();
