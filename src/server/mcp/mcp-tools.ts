import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { StoredEvent } from "../../core/events.js";
import { errorMessage, isTroupeError } from "../../core/errors.js";
import { memoryNamespaceFor } from "../../runtime/memory-owner.js";
import { RUN_STATUSES } from "../../core/run.js";
import { advertisedShape, McpRunInput } from "../run-request-wire.js";
import { DecideBody, MemoryBody, ResumeBody } from "../schemas.js";
import { taskSummary } from "../task-views.js";
import { parseRequestPart } from "../validation.js";
import { lastEventSeq } from "../run-follow.js";
import { type OutputSchema, parseOutputSchema } from "../structured-answer.js";
import type { McpContext } from "./mcp-context.js";
import { askThroughElicitation } from "./elicitation.js";
import { outcomeOf, progressLine, RunOutcome, waitForRun } from "./run-outcome.js";

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** How long a tool call waits for its run to rest by default before answering with where it stands. */
const DEFAULT_WAIT_SECONDS = 600;
const MAX_WAIT_SECONDS = 3_600;
/** Questions one call may put to a person through elicitation before it answers with the run waiting. */
const MAX_ELICITATIONS = 20;

const WaitSeconds = z
  .number()
  .int()
  .min(0)
  .max(MAX_WAIT_SECONDS)
  .optional()
  .describe(`how long to wait for the run to finish or to wait for a person, in seconds (default ${DEFAULT_WAIT_SECONDS}); a run still going after it keeps going: get_run picks it up`);

/** A tool's answer: the value as structured content and as JSON text (for clients that read text only). */
function answer(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value, null, 2) }], structuredContent: value };
}

/** A failure the model and the person can read: the troupe error's code and message. */
function failure(error: unknown): CallToolResult {
  const text = isTroupeError(error) ? `${error.code}: ${error.message}` : `error: ${errorMessage(error)}`;
  return { content: [{ type: "text", text }], isError: true };
}

async function guarded(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (error) {
    return failure(error);
  }
}

/** What a tool call tells its client while it follows a run: a line, or a run's event. */
interface RunReporter {
  line: (line: string) => Promise<void>;
  event: (event: StoredEvent) => Promise<void>;
}

/**
 * Tells the client of a call how its run goes: `notifications/progress` for the events worth a
 * line when the client asked for progress (a progress token), and every event as a log message
 * at its level when the session's level lets it through (see mcp-logging.ts) — both on the
 * call's own stream.
 */
function runReporter(context: McpContext, extra: Extra, runId: string): RunReporter {
  const token = extra._meta?.progressToken;
  let progress = 0;
  const line = async (text: string): Promise<void> => {
    if (token === undefined) return;
    progress += 1;
    await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, message: text } }).catch(() => undefined);
  };
  return {
    line: async (text) => {
      await line(text);
      await context.log.send(extra, "notice", { run_id: runId, message: text });
    },
    event: async (event) => {
      const text = progressLine(event);
      if (text) await line(text);
      await context.log.runEvent(extra, runId, event);
    },
  };
}

/**
 * Follows a run until it rests; when it waits for a person and the client can ask one (elicitation),
 * asks, resumes with the reply and follows again. Otherwise — or when the person dismisses the
 * form — the outcome says what the run waits for, for `resume_run`.
 */
async function driveRun(context: McpContext, runId: string, after: number, waitSeconds: number | undefined, extra: Extra, output?: OutputSchema): Promise<CallToolResult> {
  const { feed, principal } = context;
  const report = runReporter(context, extra, runId);
  const deadline = Date.now() + (waitSeconds ?? DEFAULT_WAIT_SECONDS) * 1000;
  let from = after;
  for (let asked = 0; ; asked += 1) {
    const record = await waitForRun(feed, principal, runId, from, Math.max(0, deadline - Date.now()), report.event, extra.signal);
    const outcome = await outcomeOf(feed, record, output);
    if (!outcome.interrupt || asked >= MAX_ELICITATIONS || Date.now() >= deadline || extra.signal.aborted) return answer(outcome);
    const reply = await askThroughElicitation(context, outcome.interrupt, extra, deadline - Date.now());
    if (!reply) return answer(outcome);
    from = await lastEventSeq(feed, runId);
    await feed.tasks.resume(principal, runId, { ...reply, ...(outcome.interrupt.id ? { interrupt_id: outcome.interrupt.id } : {}) });
    await report.line(`${reply.decision}: the run continues`);
  }
}

/** The seven tools, each with annotations saying whether it changes anything. */
export function registerRunTools(server: McpServer, context: McpContext): void {
  const { feed, principal } = context;
  const { tasks } = feed;
  const troupe = tasks.troupe;

  server.registerTool(
    "run_task",
    {
      title: "Run a task",
      description:
        "Give troupe a task: it plans subtasks, runs them on its agents with tools, reviews the work and answers. Sends a progress notification as each subtask starts and ends. Returns the answer, the status and the run id; when the run waits for a person it asks through the client (elicitation) when it can, else it answers with the question for resume_run.",
      // REST's body but the webhook (run-request-wire.ts), listed with its rules and parsed by troupe for errors that name the field.
      inputSchema: { ...advertisedShape(McpRunInput), wait_seconds: WaitSeconds },
      outputSchema: RunOutcome.shape,
      annotations: { title: "Run a task", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (input, extra) =>
      guarded(async () => {
        const { wait_seconds: waitSeconds, ...request } = input;
        const body = parseRequestPart(McpRunInput, request);
        // The run answers in JSON valid against it (strict structured output), or fails with the validation errors.
        const output = body.output_schema !== undefined ? parseOutputSchema(body.output_schema) : undefined;
        const { record } = await tasks.submit(principal, body, undefined);
        return driveRun(context, record.id, 0, waitSeconds, extra, output);
      }),
  );

  server.registerTool(
    "get_run",
    {
      title: "Get a run",
      description: "A run by id: its status, answer, and what it waits for. With wait_seconds, waits for it to finish or to wait for a person (with progress notifications): a run started by a client that went away is picked up here.",
      inputSchema: { run_id: z.string().min(1).max(200), wait_seconds: WaitSeconds },
      outputSchema: RunOutcome.shape,
      annotations: { title: "Get a run", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (input, extra) =>
      guarded(async () => {
        const record = await tasks.record(principal, input.run_id);
        if (!input.wait_seconds) return answer(await outcomeOf(feed, record));
        const after = await lastEventSeq(feed, record.id);
        const waited = await waitForRun(feed, principal, record.id, after, input.wait_seconds * 1000, runReporter(context, extra, record.id).event, extra.signal);
        return answer(await outcomeOf(feed, waited));
      }),
  );

  server.registerTool(
    "list_runs",
    {
      title: "List runs",
      description: "Your runs, newest first, optionally of one status or one thread.",
      inputSchema: {
        status: z.enum(RUN_STATUSES).optional(),
        thread_id: z.string().optional(),
        limit: z.number().int().min(1).max(100).optional(),
        offset: z.number().int().min(0).optional(),
      },
      annotations: { title: "List runs", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (input) =>
      guarded(async () => {
        const query = { limit: input.limit ?? 20, offset: input.offset ?? 0, ...(input.status ? { status: input.status } : {}), ...(input.thread_id ? { thread_id: input.thread_id } : {}) };
        const { items, total } = await tasks.list(principal, query);
        return answer({ items: items.map(taskSummary), total });
      }),
  );

  server.registerTool(
    "resume_run",
    {
      title: "Answer a waiting run",
      description:
        "Answers a run that waits for a person: approve, or reject with feedback (a plan, an answer, a tool call), or answer its question. Then follows the run like run_task.",
      inputSchema: {
        run_id: z.string().min(1).max(200),
        decision: z.enum(["approve", "reject", "answer", "edit"]),
        feedback: z.string().optional().describe("with reject: what to change"),
        answer: z.string().optional().describe("with answer: the reply to the question; with edit at an answer approval: the answer to keep"),
        content: z.record(z.string(), z.unknown()).optional().describe("with answer at a question an MCP server troupe calls asked (mcp-elicitation): its form's fields ({} accepts its defaults); reject declines"),
        interrupt_id: z.string().optional().describe("which of several waiting interrupts (default: the first)"),
        wait_seconds: WaitSeconds,
      },
      outputSchema: RunOutcome.shape,
      annotations: { title: "Answer a waiting run", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (input, extra) =>
      guarded(async () => {
        const { run_id: runId, wait_seconds: waitSeconds, ...decision } = input;
        const body = parseRequestPart(ResumeBody, decision);
        const after = await lastEventSeq(feed, runId);
        await tasks.resume(principal, runId, body);
        return driveRun(context, runId, after, waitSeconds, extra);
      }),
  );

  server.registerTool(
    "decide",
    {
      title: "Decide by vote",
      description: "Asks several voters (models, or agents in their roles) the same question; the votes are counted against a threshold. Nothing is changed.",
      inputSchema: {
        question: z.string(),
        options: z.array(z.string()).describe("the choices, at least two"),
        voters: z.union([z.number().int(), z.array(z.string())]).optional().describe("how many voters, or which (agent names, provider:model ids)"),
        threshold: z.number().optional().describe("the share of the votes a decision needs (default 0.6)"),
      },
      annotations: { title: "Decide by vote", readOnlyHint: true, idempotentHint: false, openWorldHint: true },
    },
    (input, extra) =>
      guarded(async () => {
        const body = parseRequestPart(DecideBody, input);
        return answer({ ...(await troupe.decide(body, { signal: extra.signal })) });
      }),
  );

  server.registerTool(
    "memory_search",
    {
      title: "Search your memory",
      description: "The remembered facts most relevant to a query, from your long-term memory only.",
      inputSchema: { query: z.string().min(1).max(2_000), limit: z.number().int().min(1).max(50).optional() },
      annotations: { title: "Search your memory", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    (input) =>
      guarded(async () => {
        const found = await troupe.store.memories.search(memoryNamespaceFor(principal.id), input.query, { limit: input.limit ?? 10 });
        return answer({ query: input.query, retrieval: found.retrieval, items: found.items.map((item) => ({ id: item.id, text: item.text, subject: item.subject, score: item.score })) });
      }),
  );

  server.registerTool(
    "memory_save",
    {
      title: "Remember a fact",
      description: "Keeps a fact in your long-term memory; a fact with the same subject replaces the earlier one.",
      inputSchema: {
        text: z.string(),
        subject: z.string().optional(),
        ttl_seconds: z.number().int().optional(),
      },
      annotations: { title: "Remember a fact", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    (input) =>
      guarded(async () => {
        const body = parseRequestPart(MemoryBody, input);
        const { item, created } = await troupe.store.memories.save(memoryNamespaceFor(principal.id), {
          text: body.text,
          ...(body.subject !== undefined ? { subject: body.subject } : {}),
          ...(body.ttl_seconds !== undefined ? { ttlSeconds: body.ttl_seconds } : {}),
          sourceRun: null,
        });
        return answer({ id: item.id, text: item.text, subject: item.subject, created });
      }),
  );
}
