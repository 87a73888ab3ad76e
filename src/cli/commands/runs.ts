import type { Command } from "commander";
import { describeBudgetStop } from "../../core/budget.js";
import { InputError, NotFoundError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import { describeTokens, RUN_STATUSES, type RunStatus } from "../../core/run.js";
import { truncate } from "../../core/text.js";
import { addEngineFlags, type EngineFlags, lookupTarget, openEngine } from "../engine-flags.js";
import { formatMs, out, parseNumberFlag, printJson } from "../io.js";
import { ganttLines } from "../gantt.js";
import { planLines, unfinishedLine } from "../render.js";
import { registerRunsTimeTravel } from "./runs-time-travel.js";
import { registerRunsDelete } from "./gc.js";

interface ListFlags extends EngineFlags {
  json?: boolean;
  limit?: string;
  status?: string;
}

interface ShowFlags extends EngineFlags {
  json?: boolean;
  mermaid?: boolean;
  events?: boolean;
}

/** One stored event as a timeline line (the console's timeline and the SSE stream read the same events). */
function eventLine(event: StoredEvent): string {
  const detail = (() => {
    switch (event.type) {
      case "run-start":
        return event.resumed ? "resumed" : "started";
      case "step-start":
        return event.step;
      case "step-end":
        return `${event.step} ${event.outcome} in ${formatMs(event.durationMs)}${event.error ? `: ${truncate(event.error.replace(/\s+/g, " "), 80)}` : ""}`;
      case "plan-ready":
        return `${event.subtasks.length} subtask(s): ${event.subtasks.map((item) => item.id).join(", ")}`;
      case "subtask-start":
        return `${event.subtaskId} [${event.agent}] attempt ${event.attempt}`;
      case "subtask-end":
        return `${event.subtaskId} ${event.status} in ${formatMs(event.durationMs)}${event.summary || event.error ? `: ${truncate((event.summary || event.error || "").replace(/\s+/g, " "), 80)}` : ""}`;
      case "tool-call":
        return `${event.subtaskId ?? ""} ${event.tool} ${event.ok ? "ok" : "failed"}: ${truncate(event.preview.replace(/\s+/g, " "), 80)}`;
      case "plan-invalid":
        return `attempt ${event.attempt}: ${truncate(event.errors.join("; "), 100)}`;
      case "subtask-skip":
        return `${event.subtaskId}: ${truncate(event.reason, 80)}`;
      case "history-ready":
        return `${event.turns} earlier turn(s), ${event.trimmed} summarised, ${event.tokens}/${event.budget} tokens`;
      case "memory-recall":
        return event.error ? `failed: ${truncate(event.error, 80)}` : `${event.items.length} fact(s) (${event.retrieval ?? "?"})${event.items.length ? `: ${event.items.map((item) => item.id).join(", ")}` : ""}`;
      case "subtask-planned":
        return `${event.subtask.id} [${event.subtask.agent}] ${truncate(event.subtask.label, 80)}`;
      case "calls-in-flight":
        return event.calls.map((call) => `${call.subtaskId ?? "-"} ${call.tool} (audit #${call.auditId})`).join(", ");
      case "map-item":
        return `${event.subtaskId} item ${event.index + 1}/${event.total} ${event.status}${event.error ? `: ${truncate(event.error.replace(/\s+/g, " "), 80)}` : ""}`;
      case "critic-verdict":
        return `round ${event.verdict.iteration}: ${event.verdict.passed ? "passed" : "not passed"}, confidence ${event.verdict.confidence}`;
      case "route-decide":
        return `${event.route}: ${truncate(event.reason, 80)}`;
      case "review-decide":
        return `round ${event.round} ${event.review}: ${truncate(event.reason, 80)}`;
      case "model-retry":
      case "model-fallback":
        return `${event.incident.role} ${event.incident.model}: ${truncate(event.incident.reason, 80)}${event.incident.to ? ` → ${event.incident.to}` : ""}`;
      case "budget-exhausted":
        return describeBudgetStop(event.stop);
      case "approval-request":
        if (event.interrupt.kind === "mcp-elicitation") return `mcp-elicitation: the MCP server ${String(event.interrupt.payload.server)} asks (during ${String(event.interrupt.payload.tool)})`;
        return event.interrupt.kind === "tool-approval" ? `tool-approval: ${String(event.interrupt.payload.agent)} → ${String(event.interrupt.payload.tool)}` : event.interrupt.kind;
      case "answer":
        return truncate(event.text.replace(/\s+/g, " "), 80);
      case "answer-token":
        return JSON.stringify(event.text);
      case "run-end":
        return `${event.status}${event.stopReason ? ` (${event.stopReason})` : ""}`;
      default:
        return "";
    }
  })();
  return `${String(event.seq).padStart(4)}  ${when(event.at).slice(11)}  ${event.type.padEnd(16)} ${detail}`.trimEnd();
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

export function registerRuns(program: Command): void {
  const runs = program.command("runs").description("list and inspect runs");

  const list = runs
    .command("list")
    .description("runs, newest first")
    .option("--json", "print the runs as a JSON array")
    .option("--limit <n>", "how many (default 20)")
    .option("--status <status>", `only runs with this status (${RUN_STATUSES.join(", ")})`);
  addEngineFlags(list, false).action(async (flags: ListFlags) => {
    const limit = flags.limit === undefined ? 20 : parseNumberFlag(flags.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new InputError("invalid_limit", "--limit must be a whole number from 1 to 1000");
    if (flags.status !== undefined && !RUN_STATUSES.includes(flags.status as RunStatus)) {
      throw new InputError("invalid_status", `--status must be one of ${RUN_STATUSES.join(", ")}`);
    }
    const { listRuns } = await import("../../store/lookup.js");
    const records = await listRuns(await lookupTarget(flags), { limit, status: flags.status as RunStatus | undefined });
    if (flags.json) {
      printJson(records.map(({ request: _request, ...record }) => record));
      return;
    }
    if (records.length === 0) {
      out("no runs yet");
      return;
    }
    for (const record of records) {
      const duration = record.activeMs > 0 ? formatMs(record.activeMs) : "";
      out(`${record.id}  ${when(record.createdAt)}  ${record.status.padEnd(11)} ${(record.stopReason ?? "").padEnd(16)} ${duration.padEnd(8)} ${truncate(record.task.replace(/\s+/g, " "), 60)}`);
    }
  });

  const show = runs
    .command("show")
    .description("one run: plan with statuses, a timeline of its subtasks with the critical path, answer, metrics")
    .argument("<runId>", "the run id (see runs list)")
    .option("--json", "print the run as JSON (with its execution graph: nodes and labelled edges)")
    .option("--mermaid", "print the run's execution graph, with statuses and the arguments each edge feeds, as Mermaid")
    .option("--events", "print the run's stored events (what the console's timeline and the SSE stream show)");
  addEngineFlags(show, false).action(async (runId: string, flags: ShowFlags) => {
    const { withRunsReadOnly } = await import("../../store/lookup.js");
    const exists = await withRunsReadOnly(await lookupTarget(flags), async (store) => (await store.get(runId)) !== undefined);
    if (!exists) throw new NotFoundError("unknown_run", `no run with id ${runId}`);
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const view = await troupe.show(runId);
      if (flags.mermaid) {
        const { executionGraphMermaid } = await import("../../core/execution-graph.js");
        out(executionGraphMermaid(view.graph));
        return;
      }
      if (flags.events) {
        const events = await troupe.store.events.list(runId);
        if (flags.json) printJson(events);
        else for (const event of events.filter((item) => item.type !== "answer-token")) out(eventLine(event));
        return;
      }
      if (flags.json) {
        printJson(view);
        return;
      }
      out(`run ${view.runId} · thread ${view.threadId}`);
      out(`task: ${view.task}`);
      out(`status: ${view.status}${view.stopReason ? ` (stop reason: ${view.stopReason})` : ""} · started ${when(view.createdAt)}${view.finishedAt ? ` · finished ${when(view.finishedAt)}` : ""}`);
      if (view.error) out(`error: ${view.error}`);
      if (view.forkedFrom) out(`forked from run ${view.forkedFrom.runId} at ${view.forkedFrom.subtaskId ? `subtask ${view.forkedFrom.subtaskId}` : `checkpoint ${view.forkedFrom.checkpointId}`}`);
      if (view.waitsFor) out(`waits for run ${view.waitsFor} on its thread to stop`);
      if (view.plan.length > 0) {
        out("plan:");
        for (const line of planLines(view.plan)) out(line);
        const unfinished = unfinishedLine(view.trace?.unfinished ?? []);
        if (unfinished && view.status !== "running" && view.status !== "queued") out(unfinished);
        for (const line of ganttLines(view.graph)) out(line);
      }
      if (view.metrics) {
        const metrics = view.metrics;
        out(`calls: ${metrics.llmCalls} model, ${metrics.toolCalls} tool · tokens: ${describeTokens(metrics)} · cost $${metrics.costUsd.toFixed(4)} · reviews: ${metrics.reflectionCount} redo round(s) · ${formatMs(metrics.durationMs)}`);
      }
      for (const delivery of view.webhooks) {
        const answer = delivery.lastStatus !== null ? ` (last answer ${delivery.lastStatus})` : "";
        const next = delivery.nextAttemptAt !== null ? `, next attempt ${when(delivery.nextAttemptAt)}` : "";
        out(`webhook ${delivery.event} → ${delivery.url}: ${delivery.status} after ${delivery.attempts} attempt(s)${answer}${next}${delivery.lastError && delivery.status !== "delivered" ? `: ${truncate(delivery.lastError, 100)}` : ""}`);
      }
      if (view.answer) {
        out("");
        out(view.answer);
      }
    } finally {
      await troupe.shutdown();
    }
  });
  registerRunsTimeTravel(runs);
  registerRunsDelete(runs);
}
