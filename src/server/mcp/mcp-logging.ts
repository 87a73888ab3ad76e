import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { type LoggingLevel, LoggingLevelSchema, type ServerNotification, type ServerRequest, SetLevelRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { StoredEvent } from "../../core/events.js";
import { truncate } from "../../core/text.js";
import { anyParams, paramsOf } from "./mcp-params.js";
import { progressLine } from "./run-outcome.js";

/** The level a session logs at until the client sets one: what a person following a run wants to see. */
export const DEFAULT_LOG_LEVEL: LoggingLevel = "info";

const SEVERITY = new Map<LoggingLevel, number>(LoggingLevelSchema.options.map((level, index) => [level, index]));

export interface RunLogEntry {
  level: LoggingLevel;
  message: string;
}

/**
 * A run's event as a log message, at the level a person would file it under: the run's course
 * (start, plan, each subtask, the review, the end) at info; what needs someone (a question, a
 * skipped subtask, a cancel) at notice; what went wrong but may recover (a failed subtask or tool
 * call, a refused plan, a model retried or replaced, a budget reached, a review not passed) at
 * warning; a failed run at error; the inner workings (steps, tool calls, assignments, routing) at
 * debug. The answer's tokens are not logged: the call's result carries the answer.
 */
export function runLogEntry(event: StoredEvent): RunLogEntry | undefined {
  const line = progressLine(event);
  switch (event.type) {
    case "run-start":
    case "plan-ready":
    case "subtask-start":
      return { level: "info", message: line as string };
    case "subtask-end":
      return { level: event.status === "failed" ? "warning" : "info", message: line as string };
    case "subtask-skip":
    case "approval-request":
      return { level: "notice", message: line as string };
    case "critic-verdict":
      return { level: event.verdict.passed ? "info" : "warning", message: line as string };
    case "run-end":
      return { level: event.status === "failed" ? "error" : event.status === "completed" ? "info" : "notice", message: line as string };
    case "plan-invalid":
      return { level: "warning", message: `the plan was refused: ${truncate(event.errors.join("; "), 300)}` };
    case "model-retry":
    case "model-fallback":
      return { level: "warning", message: `${event.incident.role}'s model ${event.incident.model} failed (attempt ${event.incident.attempt}): ${truncate(event.incident.reason, 200)}${event.type === "model-fallback" ? "; trying the next model" : ""}` };
    case "budget-exhausted":
      return { level: "warning", message: `budget reached: ${event.stop.limit} ${event.stop.used} of ${event.stop.max}` };
    case "calls-in-flight":
      return { level: "warning", message: `${event.calls.length} tool call${event.calls.length === 1 ? "" : "s"} had not finished when the run stopped: ${truncate(event.calls.map((call) => call.tool).join(", "), 200)}` };
    case "tool-call":
      return { level: event.ok ? "debug" : "warning", message: `${event.subtaskId ? `${event.subtaskId}: ` : ""}${event.tool} ${event.ok ? "ok" : "failed"} in ${event.durationMs} ms: ${truncate(event.preview, 160)}` };
    case "map-item":
      return { level: event.status === "error" ? "warning" : "debug", message: `${event.subtaskId} item ${event.index + 1}/${event.total} ${event.status}${event.error ? `: ${truncate(event.error, 160)}` : ""}` };
    case "step-start":
      return { level: "debug", message: `step ${event.step} started` };
    case "step-end":
      return { level: event.outcome === "failed" ? "warning" : "debug", message: `step ${event.step} ${event.outcome} in ${event.durationMs} ms${event.error ? `: ${truncate(event.error, 160)}` : ""}` };
    case "agent-assign":
      return { level: "debug", message: `${event.subtaskId} given to ${event.agent} (${event.capability})` };
    case "route-decide":
      return { level: "debug", message: `route ${event.route}: ${truncate(event.reason, 200)}` };
    case "review-decide":
      return { level: "debug", message: `review round ${event.round} ${event.review}: ${truncate(event.reason, 200)}` };
    default:
      return undefined;
  }
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * A session's logging: `logging/setLevel` (checked against the SDK's request schema, a bad level
 * answered -32602; the level is kept here, as the SDK's own handler keeps it where a tool call
 * cannot read it) and the run's events sent as
 * `notifications/message` on the tool call's own stream, so a client hears them while it waits for
 * the result — also over HTTP without a GET stream, and replayed with the call's stream after a
 * reconnect. One level per session: a flood of setLevel only sets it again.
 */
export class SessionLog {
  #level: LoggingLevel = DEFAULT_LOG_LEVEL;

  get level(): LoggingLevel {
    return this.#level;
  }

  /** Whether a message at `level` goes out at the session's level. */
  accepts(level: LoggingLevel): boolean {
    return (SEVERITY.get(level) ?? 0) >= (SEVERITY.get(this.#level) ?? 0);
  }

  register(server: McpServer): void {
    server.server.setRequestHandler(anyParams("logging/setLevel"), async (request) => {
      this.#level = paramsOf(SetLevelRequestSchema.shape.params, request.params, "logging/setLevel").level;
      return {};
    });
  }

  /** Sends a run's event as a log message for the call, when its level passes; a client gone meanwhile is not an error. */
  async runEvent(extra: Extra, runId: string, event: StoredEvent): Promise<void> {
    const entry = runLogEntry(event);
    if (!entry || !this.accepts(entry.level)) return;
    await this.send(extra, entry.level, { run_id: runId, seq: event.seq, event: event.type, message: entry.message });
  }

  async send(extra: Extra, level: LoggingLevel, data: Record<string, unknown>): Promise<void> {
    if (!this.accepts(level)) return;
    await extra.sendNotification({ method: "notifications/message", params: { level, logger: "troupe", data } }).catch(() => undefined);
  }
}
