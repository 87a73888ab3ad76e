import { describeAudience } from "../core/board.js";
import type { SubtaskView } from "../core/plan.js";
import { describeTokens, type RunResult, type UnfinishedSubtask } from "../core/run.js";
import { ANSWER_LEFT_OUT } from "../core/plan-check.js";
import { approvalCard } from "../core/approval-card.js";
import { truncate } from "../core/text.js";
import { describeDecision } from "../core/vote.js";
import { color, formatMs, out } from "./io.js";
import { describeSources, isUntrusted } from "../core/provenance.js";
import { describeElicitation } from "../core/elicitation-prompt.js";

const MARK: Record<string, string> = { done: "✓", failed: "✗", skipped: "-", running: "…", pending: "·" };

export function planLines(plan: SubtaskView[]): string[] {
  return plan.map((subtask) => {
    const after = subtask.dependsOn.length > 0 ? ` (after ${subtask.dependsOn.join(", ")})` : "";
    const duration = subtask.durationMs !== undefined ? ` ${formatMs(subtask.durationMs)}` : "";
    const attempts = subtask.attempts > 1 ? ` ×${subtask.attempts}` : "";
    const partial = subtask.map !== undefined && subtask.map.failed > 0 && subtask.status === "done";
    const items = subtask.map ? ` · ${subtask.map.succeeded}/${subtask.map.total} items` : "";
    const mark = partial ? "◐" : (MARK[subtask.status] ?? "?");
    const status = partial ? "partial" : subtask.failureKind && subtask.failureKind !== "error" ? `${subtask.status} (${subtask.failureKind})` : subtask.status;
    const worker = subtask.tool !== undefined ? `${subtask.agent} · ${subtask.tool}` : subtask.agent;
    const untrusted = isUntrusted(subtask.provenance) ? ` · untrusted (${truncate(describeSources(subtask.provenance), 80)})` : "";
    return `  ${mark} ${subtask.id} [${worker}] ${truncate(subtask.label, 80)}${after} — ${status}${items}${duration}${attempts}${untrusted}`;
  });
}

/** The subtasks that did not succeed, in one line (`not done: s1 failed (unable), s2 skipped`), or undefined when all did. */
export function unfinishedLine(unfinished: readonly UnfinishedSubtask[]): string | undefined {
  if (unfinished.length === 0) return undefined;
  return `not done: ${unfinished.map((entry) => `${entry.id} ${entry.status}${entry.failureKind && entry.failureKind !== "error" ? ` (${entry.failureKind})` : ""}`).join(", ")}`;
}

/** How to continue a run that waits for a person. */
export function resumeHint(result: RunResult): string {
  const kind = result.interrupt?.kind;
  if (kind === "question") return `troupe resume ${result.threadId} --answer "<your answer>"   (or --reject)`;
  if (kind === "mcp-elicitation") return `troupe resume ${result.threadId} --answer '{"field": …}'   ({} accepts its defaults; --reject declines)`;
  return `troupe resume ${result.threadId} --approve   (or --reject [--feedback TEXT])`;
}

/** The human form of a run's result: the answer (unless it was streamed already), then its decision trace. */
export function printResult(result: RunResult, streamedAnswer = ""): void {
  if (result.status === "interrupted" && result.interrupt) {
    const { kind, payload } = result.interrupt;
    if (kind === "plan-approval") {
      out(color.bold("The plan is waiting for your approval:"));
      for (const line of planLines(result.plan)) out(line);
      if (typeof payload.answer === "string") out(`  answer, filled in from the results: ${truncate(payload.answer.replace(/\n/g, " ⏎ "), 300)}`);
    } else if (kind === "answer-approval") {
      out(color.bold("The answer is waiting for your approval:"));
      out(String(payload.answer ?? ""));
    } else if (kind === "tool-approval") {
      out(color.bold(`The ${String(payload.agent ?? "")} agent wants to run the ${String(payload.riskLevel ?? "")}-risk tool ${String(payload.tool ?? "")}${payload.subtaskId ? ` (subtask ${String(payload.subtaskId)})` : ""}:`));
      // What it would do, and — when the trust policy asks — what untrusted data chose it, or what would leave and where (docs/trust.md).
      const [action, ...why] = approvalCard(payload);
      out(action ?? "");
      for (const line of why) out(color.yellow(`! ${line}`));
      out(truncate(JSON.stringify(payload.args ?? {}, null, 2), 2_000));
    } else if (kind === "mcp-elicitation") {
      // The server's words, marked as such: nothing here is troupe's own question or approval.
      out(color.bold(`A question from the MCP server "${String(payload.server ?? "")}" (not from troupe):`));
      out(describeElicitation(payload));
    } else {
      out(color.bold(`The planner asks: ${String(payload.question ?? "")}`));
    }
    out("");
    out(`Continue with: ${resumeHint(result)}`);
    return;
  }
  if (result.answer) {
    if (streamedAnswer.trim() !== result.answer.trim()) out(result.answer);
  } else if (result.error) out(`No answer: ${result.error}`);
  const trace = result.trace;
  out("");
  out(color.dim("── decision trace ──"));
  if (trace.plan.length > 0) {
    out("plan:");
    for (const line of planLines(trace.plan)) out(line);
  }
  for (const note of trace.planNotes ?? []) out(`${note.startsWith(ANSWER_LEFT_OUT) ? "plan note" : "plan order"}: ${note}`);
  if (trace.route) out(`route: ${trace.route.route} (${trace.route.reason})`);
  for (const decision of trace.reviewDecisions ?? []) out(`review round ${decision.round}: ${decision.review} (${decision.reason})`);
  if (trace.answerSource) out(`answer: by ${trace.answerSource.by} (${trace.answerSource.reason})${trace.answerSource.untrusted ? `; untrusted data from ${trace.answerSource.untrusted}` : ""}`);
  const unfinished = unfinishedLine(trace.unfinished ?? []);
  if (unfinished) out(unfinished);
  for (const review of trace.reviews) {
    out(`critic round ${review.iteration}: ${review.passed ? "passed" : "not passed"} (confidence ${review.confidence.toFixed(2)}; accuracy ${review.scores.accuracy}, completeness ${review.scores.completeness}, relevance ${review.scores.relevance}, logic ${review.scores.logic})`);
    if (review.panel) out(`  panel of ${review.panel.votes.length}: ${review.panel.votes.map((vote) => `${vote.voter} ${vote.choice ?? "abstained"}`).join(", ")} → ${describeDecision(review.panel)}`);
  }
  for (const subtask of trace.plan) {
    if (subtask.assignment) out(`assigned: ${subtask.id} → ${subtask.assignment.agent} by capability ${subtask.assignment.capability} (${subtask.assignment.candidates.map((candidate) => `${candidate.agent}: ${candidate.running} running, ${candidate.assigned} so far`).join("; ")})`);
    if (subtask.offer) {
      const found = subtask.offer.found.flatMap((entry) => entry.names);
      const via = subtask.offer.via === "planned" ? "as the plan named" : "by retrieval";
      out(`tools offered to ${subtask.id} (${via}, ${subtask.offer.offered.length} of ${subtask.offer.total}): ${subtask.offer.offered.map((tool) => tool.name).join(", ") || "none"}${found.length > 0 ? `; found later: ${found.join(", ")}` : ""}`);
    }
  }
  if ((trace.board ?? []).length > 0) {
    out("board:");
    for (const message of trace.board) out(`  ${message.id} ${message.from} → ${describeAudience(message.audience)}: ${truncate(message.text.replace(/\s+/g, " "), 140)}`);
  }
  if (trace.knownIssues.length > 0) out(`known issues: ${trace.knownIssues.join("; ")}`);
  if (trace.memories && trace.memories.items.length > 0) {
    out(`memories recalled (${trace.memories.retrieval ?? "?"}): ${trace.memories.items.map((item) => `${item.id} "${truncate(item.text, 60)}"`).join(", ")}`);
  }
  const models = [...new Set(Object.values(trace.models ?? {}))];
  if (models.length === 1) out(`model: ${models[0]}`);
  else if (models.length > 1) out(`models: ${Object.entries(trace.models).map(([role, model]) => `${role} ${model}`).join(", ")}`);
  const retries = (trace.modelIncidents ?? []).filter((incident) => incident.kind === "retry").length;
  for (const fallback of (trace.modelIncidents ?? []).filter((incident) => incident.kind === "fallback")) {
    out(`fallback: ${fallback.role} ${fallback.model} → ${fallback.to ?? "?"} (${fallback.reason})`);
  }
  out(`nodes: ${trace.nodes.join(" → ")}`);
  const metrics = result.metrics;
  out(
    `calls: ${metrics.llmCalls} model${retries > 0 ? ` (${retries} retried)` : ""}, ${metrics.toolCalls} tool · tokens: ${describeTokens(metrics)} · cost $${metrics.costUsd.toFixed(4)} · ${formatMs(metrics.durationMs)}`,
  );
  out(`status: ${result.status} (stop reason: ${result.stopReason ?? "none"}) · run ${result.runId} · thread ${result.threadId}`);
}
