import { describeAudience } from "../core/board.js";
import { describeBudgetStop } from "../core/budget.js";
import type { StoredEvent } from "../core/events.js";
import type { ModelIncident } from "../core/model-incident.js";
import { approvalCard } from "../core/approval-card.js";
import { truncate } from "../core/text.js";
import { describeDecision } from "../core/vote.js";
import { color, err, formatMs } from "./io.js";

const oneLine = (text: string, max = 100): string => truncate(text.replace(/\s+/g, " ").trim(), max);

function whose(incident: ModelIncident): string {
  return incident.subtaskId ? `${incident.subtaskId} ${incident.role}` : incident.role;
}

/** One line per event on stderr while the run goes. */
export function printProgress(event: StoredEvent): void {
  switch (event.type) {
    case "run-start":
      err(color.dim(`${event.resumed ? "resuming" : "run"} ${event.runId} · thread ${event.threadId}`));
      break;
    case "history-ready":
      err(color.dim(`    conversation: ${event.turns} earlier turn${event.turns === 1 ? "" : "s"}${event.trimmed > 0 ? ` (+${event.trimmed} summarised)` : ""}, ${event.tokens}/${event.budget} tokens`));
      break;
    case "memory-recall":
      if (event.error) err(`${color.yellow("!")} long-term memory could not be read: ${oneLine(event.error, 140)}`);
      else if (event.items.length > 0) err(color.dim(`    memory: ${event.items.length} fact${event.items.length === 1 ? "" : "s"} recalled (${event.retrieval ?? "?"}): ${oneLine(event.items.map((item) => item.id).join(", "), 80)}`));
      break;
    case "plan-ready": {
      err(`${color.cyan("▸")} plan ready: ${event.subtasks.length} subtask${event.subtasks.length === 1 ? "" : "s"}`);
      for (const subtask of event.subtasks) {
        const after = subtask.dependsOn.length > 0 ? color.dim(` (after ${subtask.dependsOn.join(", ")})`) : "";
        const each = subtask.mapOver !== undefined ? color.dim(` · once per ${subtask.mapOver}`) : "";
        const worker = subtask.tool !== undefined ? `${subtask.agent} · ${subtask.tool}` : subtask.agent;
        err(`    ${subtask.id} [${worker}] ${oneLine(subtask.label, 90)}${after}${each}`);
      }
      break;
    }
    case "plan-invalid":
      err(`${color.yellow("!")} plan attempt ${event.attempt} rejected: ${oneLine(event.errors.join("; "), 160)}`);
      break;
    case "subtask-start":
      err(`${color.cyan("▸")} ${event.subtaskId} started [${event.agent}]${event.attempt > 1 ? ` (attempt ${event.attempt})` : ""}`);
      break;
    case "tool-call":
      err(color.dim(`    · ${event.subtaskId ?? ""} ${event.tool} ${event.ok ? "ok" : "failed"} (${formatMs(event.durationMs)}): ${oneLine(event.preview, 90)}${event.untrusted ? ` [untrusted: ${oneLine(event.untrusted, 60)}]` : ""}`));
      for (const note of event.notes ?? []) err(color.dim(`      ${oneLine(note, 120)}`));
      break;
    case "subtask-planned":
      err(color.dim(`    planned ${event.subtask.id} [${event.subtask.agent}] ${oneLine(event.subtask.label, 80)} (starts while the plan is written)`));
      break;
    case "subtask-end":
      if (event.status === "done") err(`${color.green("✓")} ${event.subtaskId} done in ${formatMs(event.durationMs)}: ${oneLine(event.summary ?? "", 90)}`);
      else err(`${color.red("✗")} ${event.subtaskId} ${event.status}${event.failureKind && event.failureKind !== "error" ? ` (${event.failureKind})` : ""} in ${formatMs(event.durationMs)}: ${oneLine(event.error ?? "", 120)}`);
      break;
    case "map-item":
      // Successful items would be one line each for thousands of items: only failures are shown.
      if (event.status === "error") err(color.dim(`    · ${event.subtaskId} item ${event.index + 1}/${event.total} failed: ${oneLine(event.error ?? "", 110)}`));
      break;
    case "subtask-skip":
      err(`${color.yellow("-")} ${event.subtaskId} skipped: ${event.reason}`);
      break;
    case "critic-verdict": {
      const verdict = event.verdict;
      const mark = verdict.passed ? color.green("passed") : color.yellow("not passed");
      err(`${color.cyan("▸")} critic (round ${verdict.iteration}): ${mark}, confidence ${verdict.confidence.toFixed(2)}`);
      for (const issue of verdict.issues.slice(0, 5)) err(color.dim(`    - ${oneLine(issue, 120)}`));
      if (!verdict.passed && verdict.redo.length > 0) err(color.dim(`    redo: ${verdict.redo.join(", ")}`));
      if (!verdict.passed && verdict.replan) err(color.dim("    asks for a new plan"));
      if (verdict.panel) {
        const votes = verdict.panel.votes.map((vote) => `${vote.voter} ${vote.choice ?? "abstained"}`).join(", ");
        err(color.dim(`    panel: ${votes} → ${describeDecision(verdict.panel)}`));
      }
      break;
    }
    case "route-decide":
      err(color.dim(`    route ${event.route}: ${oneLine(event.reason, 110)}`));
      break;
    case "review-decide":
      if (event.review === "skipped") err(`${color.yellow("-")} review skipped (round ${event.round}): ${oneLine(event.reason, 110)}`);
      break;
    case "agent-assign":
      err(color.dim(`    ${event.subtaskId} → ${event.agent} (capability ${event.capability}; ${event.candidates.map((candidate) => `${candidate.agent} ${candidate.running} running`).join(", ")})`));
      break;
    case "tools-offer": {
      const found = event.offer.found.at(-1);
      if (found) err(color.dim(`    · ${event.subtaskId} find_tools "${oneLine(found.query, 60)}": ${found.names.join(", ") || "nothing"}`));
      else err(color.dim(`    · ${event.subtaskId} offered ${event.offer.offered.length} of ${event.offer.total} tools (${event.offer.via}): ${event.offer.offered.map((tool) => tool.name).join(", ") || "none"}`));
      break;
    }
    case "board-post":
      err(color.dim(`    ✉ ${event.message.from} → ${describeAudience(event.message.audience)}: ${oneLine(event.message.text, 100)}`));
      break;
    case "approval-request":
      err(`${color.yellow("⏸")} waiting for a person: ${event.interrupt.kind}${event.interrupt.kind === "mcp-elicitation" ? ` (a question of the MCP server ${String(event.interrupt.payload.server ?? "")}, not troupe's)` : ""}`);
      // A call untrusted data steered, or that would send data out where nobody named, says so: the source, what it would do, where.
      if (typeof event.interrupt.payload.steering === "object" || typeof event.interrupt.payload.egress === "object") {
        for (const line of approvalCard(event.interrupt.payload)) err(color.yellow(`    ! ${oneLine(line, 300)}`));
      }
      break;
    case "answer":
      err(`${color.cyan("▸")} answer ready`);
      break;
    case "model-retry":
      err(color.yellow(`    ! ${whose(event.incident)} ${event.incident.model}: ${oneLine(event.incident.reason, 120)}; retrying in ${formatMs(event.incident.delayMs ?? 0)}`));
      break;
    case "model-fallback":
      err(color.yellow(`    ! ${whose(event.incident)} ${event.incident.model} failed (${oneLine(event.incident.reason, 100)}, ${event.incident.attempt} attempt${event.incident.attempt === 1 ? "" : "s"}); falling back to ${event.incident.to ?? "?"}`));
      break;
    case "budget-exhausted":
      err(`${color.yellow("■")} budget exhausted (${describeBudgetStop(event.stop)}): stopping with the best answer so far`);
      break;
    case "calls-in-flight":
      err(`${color.yellow("■")} ${event.calls.length} tool call(s) were in flight when the process stopped (${event.calls.map((call) => `${call.subtaskId ?? "-"} ${call.tool}, audit #${call.auditId}`).join("; ")}): each is settled by its call id, never run twice blindly`);
      break;
    case "answer-token":
    case "run-end":
      break;
  }
}

/**
 * Progress on stderr, and the synthesizer's answer on stdout as it streams. When a stream is
 * cut and retried, what was shown is ended with a line break and the answer starts again.
 * `streamed()` is the answer as last streamed, so the final print does not repeat it.
 */
export function createProgress(): { onEvent: (event: StoredEvent) => void; streamed: () => string } {
  let streamed = "";
  let open = false;
  const close = (): void => {
    if (open && !streamed.endsWith("\n")) process.stdout.write("\n");
    open = false;
  };
  return {
    onEvent: (event) => {
      if (event.type === "answer-token") {
        if (!open) streamed = "";
        open = true;
        streamed += event.text;
        process.stdout.write(event.text);
        return;
      }
      if ((event.type === "model-retry" || event.type === "model-fallback") && event.incident.role === "synthesizer" && open) {
        close();
        streamed = "";
        err(color.yellow("    ! the answer's stream was cut off; it starts again"));
      }
      if (event.type === "answer" || event.type === "run-end") close();
      printProgress(event);
    },
    streamed: () => streamed,
  };
}
