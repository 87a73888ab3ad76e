// The top of a task page: its words, its status with the Cancel button, the current step, what
// a fork re-runs, and a notice for what went wrong loading or cancelling it.

import { api } from "../api.js";
import { badge, errorBox, h } from "../dom.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** A fork says what it re-runs: the original task (a link), from which subtask or checkpoint. */
function renderOrigin(origin, forked) {
  origin.hidden = !forked;
  if (!forked) return origin.replaceChildren();
  const from = forked.subtask_id ? `from subtask ${forked.subtask_id}` : `from checkpoint ${forked.checkpoint_id}`;
  origin.replaceChildren("A re-run of ", h("a", { href: `#/tasks/${encodeURIComponent(forked.task_id)}`, id: "forked-from-link" }, forked.task_id), ` ${from}: the results before it were kept; that task stays as it was.`);
}

/** Fills `root` with the header; `reloadSoon` after a cancel. Returns the cleanup. */
export function mountHeader(root, { store, reloadSoon }) {
  const title = h("h1", { id: "task-title" }, "…");
  const status = h("span", { id: "task-status" });
  const step = h("span", { id: "task-step", class: "muted" });
  const cancel = h("button", { type: "button", id: "cancel-task", hidden: true }, "Cancel");
  const notice = h("div");
  /** For a fork: the task it re-runs, and from where. */
  const origin = h("p", { id: "forked-from", class: "muted", hidden: true });
  root.replaceChildren(
    h("p", {}, h("a", { href: "#/" }, "← all tasks")),
    h("div", { class: "row" }, title, h("span", { class: "spacer" }), status, cancel),
    h("div", { class: "row" }, step),
    origin,
    notice,
  );

  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      await api(`/tasks/${encodeURIComponent(store.state.taskId)}/cancel`, { method: "POST" });
    } catch (error) {
      notice.replaceChildren(errorBox(error));
    }
    cancel.disabled = false;
    reloadSoon();
  });

  return store.subscribe((change, { view }) => {
    if (change.type === "error" && change.of === "task") notice.replaceChildren(errorBox(change.error));
    if (change.type === "event" && change.event.type === "subtask-start") step.textContent = `running ${change.event.subtaskId}`;
    if (change.type !== "view") return;
    title.textContent = view.task;
    status.replaceChildren(badge(view.status));
    step.textContent = view.progress.current_step + (view.progress.subtasks_total ? ` · ${view.progress.subtasks_done}/${view.progress.subtasks_total} subtasks done` : "");
    cancel.hidden = TERMINAL.has(view.status);
    renderOrigin(origin, view.forked_from);
  });
}
