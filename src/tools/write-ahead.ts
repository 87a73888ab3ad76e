import { errorMessage } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import { preview } from "../core/text.js";
import { type AuditSink, type CallEffect, type RecordedCall, redact } from "./audit.js";
import { addReason, auditEntry, parseOutcome, toolSide, type Trail } from "./call-trail.js";
import type { ToolContext, ToolDefinition, ToolOutcome } from "./define-tool.js";

/**
 * The write-ahead step of a tool call: its audit row written as `started` before it runs, so a
 * crash mid-call leaves a row to find; and, when a call id comes again (a resumed run), the
 * earlier row settled first: replayed, run again, or refused as `outcome_unknown`.
 */

/**
 * A call whose id already has a row. Completed: its recorded outcome, without running. Begun
 * and never finished (its process died): for a tool that records its effect, the workspace
 * decides — already in the after-state, the derived result; still in the before-state, run it;
 * anything else, `outcome_unknown`. Idempotent tools run again; other tools are never run
 * twice blindly: `outcome_unknown`. Undefined means: run it.
 */
async function settleEarlierCall(tool: ToolDefinition, args: unknown, context: ToolContext, previous: RecordedCall, trail: Trail, idempotent: boolean): Promise<ToolOutcome | undefined> {
  const callId = context.callId as string;
  // It stopped for its server's question (elicitation): the same call is made again, with the answer.
  if (previous.status !== "started" && previous.entry.errorCode === "input_required") return undefined;
  if (previous.status !== "started") {
    const recorded = parseOutcome(previous.outcome);
    if (recorded) {
      trail.replayed = previous;
      trail.status = previous.status;
      return recorded;
    }
    // A row of a call that never ran (refused, served from the cache) says nothing about effects.
    if (idempotent || previous.entry.attempts === 0) return undefined;
    trail.replayed = previous;
    return { ok: false, error: { code: "outcome_unknown", message: `${tool.name} already ran as call ${callId} (audit row ${previous.id}) and its result was not kept; it is not run twice` } };
  }
  trail.rowId = previous.id;
  if (tool.effect && previous.effect) trail.effect = previous.effect;
  if (tool.effect?.settle && previous.effect) {
    // The tool settles it itself (finishing what it journaled, or finding nothing done).
    const rest = toolSide(context);
    const settled = await tool.effect.settle(args, previous.effect, rest).catch(() => ({ state: "other" as const }));
    if (settled.state === "after") {
      addReason(trail, "settled after a crash: its journaled effect was completed, so it did not run again");
      trail.status = "ok";
      return { ok: true, value: settled.value, summary: tool.summarize ? tool.summarize(settled.value, args) : preview(settled.value, LIMITS.previewChars) };
    }
    if (settled.state === "before") {
      addReason(trail, "run again after a crash: it had changed nothing");
      return undefined;
    }
  } else if (tool.effect && previous.effect) {
    const rest = toolSide(context);
    const state = await tool.effect.check(previous.effect, rest).catch(() => "other" as const);
    if (state === "after") {
      addReason(trail, "settled after a crash: the workspace already held this call's effect, so it did not run again");
      trail.status = "ok";
      const value = tool.effect.derive(args, previous.effect);
      return { ok: true, value, summary: tool.summarize ? tool.summarize(value, args) : preview(value, LIMITS.previewChars) };
    }
    if (state === "before") {
      addReason(trail, "run again after a crash: the workspace did not hold this call's effect");
      return undefined;
    }
  } else if (idempotent) {
    addReason(trail, "run again after a crash (idempotent)");
    return undefined;
  }
  trail.status = "error";
  const why = tool.effect ? "the workspace holds neither the state before it nor the state it was to leave" : "the tool is not idempotent and records no effect to check";
  return {
    ok: false,
    error: { code: "outcome_unknown", message: `${tool.name} began as call ${callId} (audit row ${previous.id}) and its process stopped before it finished; whether it had its effect is unknown (${why}), so it is not run again` },
  };
}

/**
 * A call a crash cut short whose effect nothing can tell (a tool that keeps no journal and is
 * not idempotent): only a person can say whether to run it again. With someone to ask (the
 * graph's approval), the run waits for them — approved, it runs once more; rejected, it stays
 * failed. Without (a map's item, a direct call), it fails as `outcome_unknown`.
 */
async function askAboutUnknown(tool: ToolDefinition, args: unknown, context: ToolContext, previous: RecordedCall, trail: Trail, unknown: ToolOutcome): Promise<ToolOutcome | undefined> {
  if (!context.requestApproval) return unknown;
  trail.suspended = true;
  const answer = await context.requestApproval({
    tool: tool.name,
    agent: context.agent ?? "",
    args: redact(args),
    level: trail.level,
    riskLevel: tool.riskLevel,
    reason: `${tool.name} began before troupe stopped (audit row ${previous.id}) and whether it had its effect cannot be told from the workspace: approve to run it again, reject to leave it failed`,
    ...(context.runId !== undefined ? { runId: context.runId } : {}),
    ...(context.subtaskId !== undefined ? { subtaskId: context.subtaskId } : {}),
  });
  trail.suspended = false;
  if (answer.approved) {
    trail.decision = "approved";
    trail.status = "not_run";
    addReason(trail, "run again after a crash: its outcome was unknown, and a person approved running it again");
    return undefined;
  }
  trail.decision = "rejected";
  return { ok: false, error: { code: "outcome_unknown", message: `${unknown.ok ? "" : unknown.error.message}; a person chose not to run it again${answer.feedback ? `: ${answer.feedback}` : ""}` } };
}

/** Writes the call's row ahead, as `started`, once it is about to run (after any earlier row of the same call id is settled). */
export async function writeAhead(sink: AuditSink | undefined, tool: ToolDefinition, args: unknown, context: ToolContext, trail: Trail, idempotent: boolean): Promise<ToolOutcome | undefined> {
  if (!sink?.begin || !sink.complete) return undefined;
  trail.keepsOutcome = !idempotent;
  if (context.callId && sink.findCall && !context.firstPass) {
    const previous = await sink.findCall(context.callId);
    if (previous) {
      const settled = await settleEarlierCall(tool, args, context, previous, trail, idempotent);
      if (settled && !settled.ok && settled.error.code === "outcome_unknown" && previous.status === "started") return askAboutUnknown(tool, args, context, previous, trail, settled);
      if (settled) return settled;
    }
  }
  if (trail.rowId !== undefined) return undefined;
  let effect: CallEffect | undefined;
  if (context.callId && tool.effect) {
    const rest = toolSide(context);
    // A target that cannot be described now (outside, a bad path) fails the call itself in a moment.
    effect = await tool.effect.capture(args, rest).catch(() => undefined);
  }
  if (effect) trail.effect = effect;
  try {
    trail.rowId = await sink.begin(auditEntry(tool.name, args, context, trail), effect);
  } catch {
    // the audit sink's fault must not change the outcome; the call is recorded after it runs
  }
  return idempotent ? undefined : onDisk(sink, tool, trail);
}

/**
 * A call that must not run twice starts only once its row, and the run's steps before it (its
 * checkpoints, committed without waiting for the disk), are on disk: a power cut can then make
 * the run repeat model calls and idempotent calls, never this one unknowingly. A disk that cannot
 * be synced refuses the call (nothing more is acknowledged until the process restarts).
 */
async function onDisk(sink: AuditSink, tool: ToolDefinition, trail: Trail): Promise<ToolOutcome | undefined> {
  if (!sink.onDisk) return undefined;
  try {
    await sink.onDisk();
    return undefined;
  } catch (error) {
    trail.status = "error";
    addReason(trail, "not run: the database could not be synced to disk");
    return { ok: false, error: { code: "database_unavailable", message: `${tool.name} was not run: the database could not be synced to disk (${errorMessage(error)}); restart troupe` } };
  }
}
