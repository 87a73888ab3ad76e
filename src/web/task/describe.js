// The timeline's words for each event of a task's stream, as the CLI says them.

/** A message's audience in words, as the CLI says it. */
export function audienceOf(audience) {
  if (audience.kind === "subtask") return audience.id;
  if (audience.kind === "agent") return `agent ${audience.name}`;
  if (audience.kind === "topic") return `topic #${audience.name}`;
  return "everyone";
}

/** A vote's outcome in words (a review panel's). */
function describePanel(panel) {
  const votes = panel.votes.map((vote) => `${vote.voter} ${vote.choice ?? "abstained"}`).join(", ");
  const outcome =
    panel.outcome === "decided"
      ? `decided ${panel.decision} (consensus ${panel.consensus} ≥ ${panel.threshold})`
      : panel.outcome === "tie"
        ? `tie between ${panel.leading.join(" and ")}: no decision`
        : panel.outcome === "no_consensus"
          ? `no consensus: ${panel.leading[0]} leads with ${panel.consensus} < ${panel.threshold}`
          : "no votes";
  return `${votes} → ${outcome}`;
}

/** One line of the timeline for an event. */
export function describe(event) {
  switch (event.type) {
    case "run-start":
      return event.resumed ? "resumed" : "started";
    case "plan-ready":
      return `plan ready: ${event.subtasks.length} subtask${event.subtasks.length === 1 ? "" : "s"}`;
    case "subtask-planned":
      return `planned ${event.subtask.id} (${event.subtask.agent}) while the plan is written: ${event.subtask.label}`;
    case "plan-invalid":
      return `plan attempt ${event.attempt} rejected: ${event.errors.join("; ")}`;
    case "subtask-start":
      return `${event.subtaskId} started (${event.agent})${event.attempt > 1 ? `, attempt ${event.attempt}` : ""}`;
    case "subtask-end":
      return `${event.subtaskId} ${event.status}${event.failureKind && event.failureKind !== "error" ? ` (${event.failureKind})` : ""} in ${event.durationMs} ms${event.summary || event.error ? `: ${event.summary || event.error}` : ""}${event.untrusted ? ` · untrusted (${event.untrusted})` : ""}`;
    case "subtask-skip":
      return `${event.subtaskId} skipped: ${event.reason}`;
    case "tool-call":
      return `${event.subtaskId ?? ""} ${event.tool} ${event.ok ? "ok" : "failed"}: ${event.preview}${event.untrusted ? ` · untrusted (${event.untrusted})` : ""}`;
    case "map-item":
      return `${event.subtaskId} item ${event.index + 1}/${event.total} ${event.status === "success" ? "done" : `failed: ${event.error ?? ""}`}`;
    case "model-retry":
    case "model-fallback":
      return `${event.incident.role} ${event.incident.model}: ${event.incident.reason}${event.incident.to ? `; falling back to ${event.incident.to}` : "; retrying"}`;
    case "budget-exhausted":
      return "budget exhausted: stopping with the best answer so far";
    case "calls-in-flight":
      return `resumed with ${event.calls.length} tool call${event.calls.length === 1 ? "" : "s"} in flight when the process stopped (${event.calls.map((call) => call.tool).join(", ")}): each is settled by its call id, never run twice blindly`;
    case "critic-verdict":
      return `critic round ${event.verdict.iteration}: ${event.verdict.passed ? "passed" : "not passed"} (confidence ${event.verdict.confidence})${event.verdict.panel ? `; panel: ${describePanel(event.verdict.panel)}` : ""}`;
    case "route-decide":
      return `route ${event.route}: ${event.reason}`;
    case "review-decide":
      return `review round ${event.round} ${event.review}: ${event.reason}`;
    case "agent-assign":
      return `${event.subtaskId} assigned to ${event.agent} by capability ${event.capability} (${event.candidates.map((candidate) => `${candidate.agent}: ${candidate.running} running`).join(", ")})`;
    case "tools-offer": {
      const found = event.offer.found.at(-1);
      if (found) return `${event.subtaskId} find_tools "${found.query}": ${found.names.join(", ") || "nothing"}`;
      return `${event.subtaskId} offered ${event.offer.offered.length} of ${event.offer.total} tools (${event.offer.via}): ${event.offer.offered.map((tool) => `${tool.name} — ${tool.why}`).join("; ")}`;
    }
    case "board-post":
      return `${event.message.from} posted to ${audienceOf(event.message.audience)}: ${event.message.text}`;
    case "approval-request":
      if (event.interrupt.kind === "mcp-elicitation") return `waiting for a person: the MCP server ${event.interrupt.payload.server} asks a question`;
      return event.interrupt.kind === "tool-approval"
        ? `waiting for a person: ${event.interrupt.payload.agent} wants to call ${event.interrupt.payload.tool}`
        : `waiting for a person: ${event.interrupt.kind}`;
    case "history-ready":
      return `conversation: ${event.turns} earlier turn${event.turns === 1 ? "" : "s"}${event.trimmed > 0 ? ` (${event.trimmed} summarised)` : ""}, ${event.tokens} of ${event.budget} tokens`;
    case "memory-recall":
      return event.error ? `long-term memory could not be read: ${event.error}` : `${event.items.length} remembered fact${event.items.length === 1 ? "" : "s"} recalled (${event.retrieval ?? "?"})`;
    case "answer":
      return "answer ready";
    case "run-end":
      if (event.status === "interrupted") return "paused";
      return `ended: ${event.status}${event.stopReason ? ` (${event.stopReason})` : ""}`;
    default:
      return event.type;
  }
}
