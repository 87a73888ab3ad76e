// Time travel: each subtask of a stopped task that ran can be re-run, with what depends on it, on
// a new thread (a fork); this task stays as it is.

import { api } from "../api.js";
import { badge, errorBox, h } from "../dom.js";

/** Whether a subtask ran (it finished or failed), so a fork can run it again; one never started is not offered. */
function ran(subtask) {
  return subtask.status === "done" || subtask.status === "failed";
}

/** Fills `root` (the `#rerun-card`, shown once the task has stopped with a plan). Returns the cleanup. */
export function mountRerun(root, { store }) {
  const list = h("ol", { id: "rerun-list", class: "plan" });
  const message = h("div");
  root.replaceChildren(
    h("h2", {}, "Subtasks"),
    h("p", { class: "muted" }, "Re-run from a subtask: a new task on a new thread keeps the results before it and runs it and what depends on it again; this task stays as it is."),
    list,
    message,
  );

  /** A button that forks the task from a subtask: it and what depends on it run again on a new thread. */
  function rerunButton(subtask) {
    const onclick = async (event) => {
      event.target.disabled = true;
      message.replaceChildren();
      try {
        const forked = await api(`/tasks/${encodeURIComponent(store.state.taskId)}/fork`, { method: "POST", body: { from: subtask.id } });
        location.hash = `#/tasks/${forked.task_id}`;
      } catch (error) {
        event.target.disabled = false;
        message.replaceChildren(errorBox(error));
      }
    };
    return h("button", { type: "button", class: "rerun", id: `rerun-${subtask.id}`, onclick }, "Re-run from here");
  }

  return store.subscribe((change, { view }) => {
    if (change.type !== "view") return;
    const plan = view.plan ?? [];
    const stopped = !["queued", "running"].includes(view.status);
    root.hidden = plan.length === 0 || !stopped;
    list.replaceChildren(
      ...plan.map((subtask) =>
        h(
          "li",
          { dataset: { id: subtask.id } },
          h("b", {}, `${subtask.id} · ${subtask.agent}`),
          ` ${subtask.label} `,
          badge(subtask.status),
          " ",
          ran(subtask) ? rerunButton(subtask) : h("span", { class: "muted not-run" }, "did not run"),
        ),
      ),
    );
  });
}
