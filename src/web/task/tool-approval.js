// Tool calls waiting for a person's approval: what each would do, why it asks, its arguments,
// and Approve / Reject (with feedback) for each.

import { h } from "../dom.js";

/**
 * Tool calls waiting for approval (issue 6): one card per call, since parallel subtasks may
 * wait at once; each answers its own interrupt by id. Approve or reject (with feedback) only.
 */
export function toolApprovals(approval, pending, decide) {
  const cards = pending.map((interrupt, index) => {
    const suffix = index === 0 ? "" : `-${index + 1}`;
    const { tool, agent, subtaskId, level, riskLevel, reason, args, steering, egress, card: lines } = interrupt.payload;
    const feedback = h("textarea", { id: `feedback${suffix}`, rows: 2, placeholder: "why not (for Reject; the agent is told)" });
    const card = h("div", { class: "tool-approval", dataset: { interruptId: interrupt.id ?? "", tool: String(tool ?? "") } });
    const answer = (decision) => decide({ decision, ...(decision === "reject" && feedback.value.trim() ? { feedback: feedback.value.trim() } : {}), ...(interrupt.id ? { interrupt_id: interrupt.id } : {}) }, card);
    card.append(
      h("h3", {}, `${agent ?? "an agent"} wants to call ${tool ?? "a tool"}${subtaskId ? ` (${subtaskId})` : ""}`),
      // What the call would do, then — when the trust policy asks — the untrusted source that chose it, or what would leave and where.
      ...(Array.isArray(lines) && lines.length > 0
        ? lines.map((line, at) => h("p", { class: at > 0 && (steering || egress) ? "steered" : "action" }, String(line)))
        : steering
          ? [h("p", { class: "steered" }, `Steered by untrusted data from ${(steering.sources ?? []).map((source) => `${source.kind} ${source.name}`).join(", ")}: ${(steering.targets ?? []).map((target) => target.argument).join(", ")} did not come from your task.`)]
          : []),
      h("p", { class: "muted" }, [reason, level ? `needs ${level}` : "", riskLevel ? `${riskLevel} risk` : ""].filter(Boolean).join(" · ")),
      h("pre", { class: "args" }, JSON.stringify(args ?? {}, null, 2)),
      feedback,
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", class: "primary", id: `approve${suffix}`, onclick: () => answer("approve") }, "Approve"),
        h("button", { type: "button", id: `reject${suffix}`, onclick: () => answer("reject") }, "Reject"),
      ),
    );
    return card;
  });
  approval.replaceChildren(h("h2", {}, pending.length === 1 ? "A tool call waits for your approval" : `${pending.length} tool calls wait for your approval`), ...cards);
}
