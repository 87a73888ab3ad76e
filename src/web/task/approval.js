// What the run waits for a person on: the plan or the answer to approve (or edit, or reject), the
// planner's question, tool calls to approve (tool-approval.js), an MCP server's form
// (elicitation.js). Each decision resumes the task, and the page is loaded again.

import { api } from "../api.js";
import { errorBox, h } from "../dom.js";
import { elicitation } from "./elicitation.js";
import { showAnswer } from "./markdown.js";
import { toolApprovals } from "./tool-approval.js";

/** The plan as the editor shows it: the fields a person may change. */
function editablePlan(plan) {
  return JSON.stringify(
    plan.map(({ id, label, agent, dependsOn, args, tool, mapOver, tools, capability }) => ({ id, label, agent, dependsOn, args, ...(tool ? { tool } : {}), ...(mapOver ? { mapOver } : {}), ...(tools ? { tools } : {}), ...(capability ? { capability } : {}) })),
    null,
    2,
  );
}

/** The planner's question: a box for the answer, Answer and Reject. */
function question(approval, interrupt, decide, reject) {
  const reply = h("input", { id: "answer-input", type: "text", placeholder: "your answer" });
  approval.replaceChildren(
    h("h2", {}, "The planner asks"),
    h("p", {}, String(interrupt.payload.question ?? "")),
    reply,
    h("div", { class: "row" }, h("button", { type: "button", class: "primary", id: "send-answer", onclick: () => reply.value.trim() && decide({ decision: "answer", answer: reply.value.trim() }) }, "Answer"), reject),
  );
}

/** The plan or the answer waiting for approval: Approve, Reject (with feedback), or Edit it and run that. */
function planOrAnswer(approval, interrupt, decide, feedback, reject) {
  const isPlan = interrupt.kind === "plan-approval";
  const plan = Array.isArray(interrupt.payload.plan) ? interrupt.payload.plan : [];
  const editable = isPlan ? editablePlan(plan) : String(interrupt.payload.answer ?? "");
  const editor = h("textarea", { id: "editor", rows: isPlan ? 14 : 8, hidden: true }, editable);
  const saveEdit = h("button", { type: "button", id: "save-edit", hidden: true }, isPlan ? "Run this plan" : "Use this answer");
  saveEdit.addEventListener("click", () => {
    if (!isPlan) return decide({ decision: "edit", answer: editor.value });
    try {
      decide({ decision: "edit", plan: JSON.parse(editor.value) });
    } catch (error) {
      approval.append(errorBox(new Error(`the plan is not valid JSON: ${error.message}`)));
    }
  });
  const summary = isPlan
    ? h("ol", { class: "plan" }, ...plan.map((subtask) => h("li", {}, h("b", {}, `${subtask.id} · ${subtask.agent}`), ` ${subtask.label}`, subtask.dependsOn?.length ? h("span", { class: "muted" }, ` (after ${subtask.dependsOn.join(", ")})`) : "")))
    : h("div", { class: "markdown" });
  if (!isPlan) showAnswer(summary, editable, interrupt.payload.format);
  approval.replaceChildren(
    h("h2", {}, isPlan ? "The plan waits for your approval" : "The answer waits for your approval"),
    summary,
    feedback,
    h(
      "div",
      { class: "row" },
      h("button", { type: "button", class: "primary", id: "approve", onclick: () => decide({ decision: "approve" }) }, "Approve"),
      reject,
      h("button", { type: "button", id: "edit", onclick: () => ((editor.hidden = false), (saveEdit.hidden = false)) }, "Edit"),
    ),
    editor,
    saveEdit,
  );
}

/** Fills `root` (the `#approval` card, shown while the task is interrupted); `load` reloads the task after a decision. Returns the cleanup. */
export function mountApproval(root, { store, load }) {
  /** What the card shows, so a reload that changes nothing keeps what the person is typing. */
  let shown = "";

  async function decide(body, card = root) {
    root.querySelectorAll("button").forEach((button) => (button.disabled = true));
    try {
      await api(`/tasks/${encodeURIComponent(store.state.taskId)}/resume`, { method: "POST", body });
      root.hidden = true;
      shown = "";
      await load();
    } catch (error) {
      card.append(errorBox(error));
      root.querySelectorAll("button").forEach((button) => (button.disabled = false));
    }
  }

  function render(view) {
    const interrupt = view?.status === "interrupted" ? view.interrupt : null;
    root.hidden = !interrupt;
    const next = interrupt ? JSON.stringify([interrupt, view.interrupts ?? []]) : "";
    if (next === shown && root.childElementCount > 0) return;
    shown = next;
    if (!interrupt) return root.replaceChildren();
    if (interrupt.kind === "tool-approval") {
      const pending = (view.interrupts ?? []).filter((item) => item.kind === "tool-approval");
      return toolApprovals(root, pending.length > 0 ? pending : [interrupt], decide);
    }
    if (interrupt.kind === "mcp-elicitation") return elicitation(root, (view.interrupts ?? []).find((item) => item.kind === "mcp-elicitation") ?? interrupt, decide);
    const feedback = h("textarea", { id: "feedback", rows: 2, placeholder: "what should change (for Reject)" });
    const reject = h("button", { type: "button", id: "reject", onclick: () => decide({ decision: "reject", ...(feedback.value.trim() ? { feedback: feedback.value.trim() } : {}) }) }, "Reject");
    if (interrupt.kind === "question") return question(root, interrupt, decide, reject);
    planOrAnswer(root, interrupt, decide, feedback, reject);
  }

  return store.subscribe((change, { view }) => {
    if (change.type === "view") render(view);
  });
}
