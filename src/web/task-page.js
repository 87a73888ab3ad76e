// A task: its execution graph drawn live from the event stream, a timeline of events, the answer
// as sanitised Markdown, and the buttons a person needs when the run waits for them.

import { marked } from "/vendor/marked.js";
import DOMPurify from "/vendor/purify.js";
import { api, authHeaders } from "./api.js";
import { badge, errorBox, h, time } from "./dom.js";
import { drawGraph, setNodeStatus } from "./graph.js";
import { followEvents } from "./sse.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

function markdown(container, text) {
  container.innerHTML = DOMPurify.sanitize(marked.parse(text ?? "", { async: false }));
}

/** One line of the timeline for an event. */
function describe(event) {
  switch (event.type) {
    case "run-start":
      return event.resumed ? "resumed" : "started";
    case "plan-ready":
      return `plan ready: ${event.subtasks.length} subtask${event.subtasks.length === 1 ? "" : "s"}`;
    case "plan-invalid":
      return `plan attempt ${event.attempt} rejected: ${event.errors.join("; ")}`;
    case "subtask-start":
      return `${event.subtaskId} started (${event.agent})${event.attempt > 1 ? `, attempt ${event.attempt}` : ""}`;
    case "subtask-end":
      return `${event.subtaskId} ${event.status} in ${event.durationMs} ms${event.summary || event.error ? `: ${event.summary || event.error}` : ""}`;
    case "subtask-skip":
      return `${event.subtaskId} skipped: ${event.reason}`;
    case "tool-call":
      return `${event.subtaskId ?? ""} ${event.tool} ${event.ok ? "ok" : "failed"}: ${event.preview}`;
    case "critic-verdict":
      return `critic round ${event.verdict.iteration}: ${event.verdict.passed ? "passed" : "not passed"} (confidence ${event.verdict.confidence})`;
    case "approval-request":
      return `waiting for a person: ${event.interrupt.kind}`;
    case "answer":
      return "answer ready";
    case "run-end":
      if (event.status === "interrupted") return "paused";
      return `ended: ${event.status}${event.stopReason ? ` (${event.stopReason})` : ""}`;
    default:
      return event.type;
  }
}

export function renderTask(main, taskId) {
  let view;
  let liveAnswer = "";
  let reloadTimer;
  const title = h("h1", { id: "task-title" }, "…");
  const status = h("span", { id: "task-status" });
  const step = h("span", { id: "task-step", class: "muted" });
  const cancel = h("button", { type: "button", id: "cancel-task", hidden: true }, "Cancel");
  const notice = h("div");
  const graph = h("div", { id: "graph", class: "graph-box" });
  const approval = h("section", { id: "approval", class: "card attention", hidden: true });
  const answer = h("div", { id: "answer", class: "markdown" });
  const answerSection = h("section", { class: "card", hidden: true }, h("h2", {}, "Answer"), answer);
  const metrics = h("p", { id: "metrics", class: "muted" });
  const timeline = h("ol", { id: "timeline", class: "timeline" });

  main.replaceChildren(
    h("p", {}, h("a", { href: "#/" }, "← all tasks")),
    h("div", { class: "row" }, title, h("span", { class: "spacer" }), status, cancel),
    h("div", { class: "row" }, step),
    notice,
    approval,
    h("section", { class: "card" }, h("h2", {}, "Execution graph"), graph),
    answerSection,
    metrics,
    h("section", { class: "card" }, h("h2", {}, "Timeline"), timeline),
  );

  async function load() {
    try {
      view = await api(`/tasks/${encodeURIComponent(taskId)}`);
    } catch (error) {
      notice.replaceChildren(errorBox(error));
      return;
    }
    title.textContent = view.task;
    status.replaceChildren(badge(view.status));
    step.textContent = view.progress.current_step + (view.progress.subtasks_total ? ` · ${view.progress.subtasks_done}/${view.progress.subtasks_total} subtasks done` : "");
    cancel.hidden = TERMINAL.has(view.status);
    if (view.result?.answer || view.error) {
      answerSection.hidden = false;
      markdown(answer, view.result?.answer ?? `**Error:** ${view.error}`);
    }
    const m = view.metrics;
    metrics.textContent = m ? `${m.llmCalls} model calls · ${m.toolCalls} tool calls · ${m.promptTokens} + ${m.completionTokens} tokens · ${m.durationMs} ms` : "";
    renderApproval();
  }

  async function loadGraph() {
    try {
      drawGraph(graph, await api(`/tasks/${encodeURIComponent(taskId)}/graph`));
    } catch (error) {
      graph.replaceChildren(errorBox(error));
    }
  }

  function reloadSoon() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => {
      load();
      loadGraph();
    }, 150);
  }

  async function decide(body) {
    approval.querySelectorAll("button").forEach((button) => (button.disabled = true));
    try {
      await api(`/tasks/${encodeURIComponent(taskId)}/resume`, { method: "POST", body });
      approval.hidden = true;
      await load();
    } catch (error) {
      approval.append(errorBox(error));
      approval.querySelectorAll("button").forEach((button) => (button.disabled = false));
    }
  }

  function renderApproval() {
    const interrupt = view?.status === "interrupted" ? view.interrupt : null;
    approval.hidden = !interrupt;
    if (!interrupt) return approval.replaceChildren();
    const feedback = h("textarea", { id: "feedback", rows: 2, placeholder: "what should change (for Reject)" });
    const reject = h("button", { type: "button", id: "reject", onclick: () => decide({ decision: "reject", ...(feedback.value.trim() ? { feedback: feedback.value.trim() } : {}) }) }, "Reject");
    if (interrupt.kind === "question") {
      const reply = h("input", { id: "answer-input", type: "text", placeholder: "your answer" });
      approval.replaceChildren(
        h("h2", {}, "The planner asks"),
        h("p", {}, String(interrupt.payload.question ?? "")),
        reply,
        h("div", { class: "row" }, h("button", { type: "button", class: "primary", id: "send-answer", onclick: () => reply.value.trim() && decide({ decision: "answer", answer: reply.value.trim() }) }, "Answer"), reject),
      );
      return;
    }
    const isPlan = interrupt.kind === "plan-approval";
    const plan = Array.isArray(interrupt.payload.plan) ? interrupt.payload.plan : [];
    const editable = isPlan
      ? JSON.stringify(plan.map(({ id, label, agent, dependsOn, args, tool, mapOver }) => ({ id, label, agent, dependsOn, args, ...(tool ? { tool } : {}), ...(mapOver ? { mapOver } : {}) })), null, 2)
      : String(interrupt.payload.answer ?? "");
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
    if (!isPlan) markdown(summary, editable);
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

  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      await api(`/tasks/${encodeURIComponent(taskId)}/cancel`, { method: "POST" });
    } catch (error) {
      notice.replaceChildren(errorBox(error));
    }
    cancel.disabled = false;
    reloadSoon();
  });

  function onEvent(event) {
    timeline.append(h("li", { class: `event event-${event.type}`, dataset: { seq: event.seq, type: event.type } }, h("time", {}, time(event.at)), " ", describe(event)));
    switch (event.type) {
      case "plan-ready":
        drawGraph(graph, { nodes: event.subtasks.map((subtask) => ({ ...subtask, status: "pending", summary: "", durationMs: null })), edges: event.subtasks.flatMap((subtask) => subtask.dependsOn.map((from) => ({ from, to: subtask.id, label: "" }))) });
        reloadSoon();
        break;
      case "subtask-start":
        if (!setNodeStatus(graph, event.subtaskId, "running")) reloadSoon();
        step.textContent = `running ${event.subtaskId}`;
        break;
      case "subtask-end":
        if (!setNodeStatus(graph, event.subtaskId, event.status, event.summary || event.error)) reloadSoon();
        break;
      case "subtask-skip":
        setNodeStatus(graph, event.subtaskId, "skipped", event.reason);
        break;
      case "answer-token":
        liveAnswer += event.text;
        answerSection.hidden = false;
        markdown(answer, liveAnswer);
        break;
      case "answer":
        liveAnswer = event.text;
        answerSection.hidden = false;
        markdown(answer, event.text);
        break;
      case "run-start":
      case "approval-request":
      case "run-end":
        reloadSoon();
        break;
    }
  }

  load();
  loadGraph();
  const stream = followEvents(taskId, { headers: authHeaders, onEvent, onEnd: reloadSoon, onError: () => {} });
  return () => {
    stream.close();
    clearTimeout(reloadTimer);
  };
}
