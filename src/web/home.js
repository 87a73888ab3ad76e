// The home page: a form to submit a task, and the caller's tasks with their statuses.

import { api } from "./api.js";
import { badge, dateTime, errorBox, h } from "./dom.js";

const STATUSES = ["", "queued", "running", "interrupted", "completed", "failed", "cancelled"];
const PAGE = 20;

export function renderHome(main, { navigate }) {
  // The page shown is after cursors[cursors.length - 1] (none: the newest); "Older" follows next_cursor, "Newer" steps back.
  let cursors = [];
  let status = "";
  let timer;
  const list = h("div", { id: "task-list" });
  const message = h("div");

  const task = h("textarea", { id: "task-input", name: "task", rows: 3, maxlength: 5000, required: true, placeholder: "compute 17% of 2,340 and save it to result.txt" });
  const approvePlan = h("input", { id: "approve-plan", type: "checkbox" });
  const approveAnswer = h("input", { id: "approve-answer", type: "checkbox" });
  const iterations = h("input", { id: "max-iterations", type: "number", min: 1, max: 50, value: 3 });
  const submit = h("button", { type: "submit", class: "primary", id: "submit-task" }, "Run task");
  const form = h(
    "form",
    { id: "task-form", class: "card" },
    h("label", { for: "task-input" }, "Task"),
    task,
    h(
      "div",
      { class: "row" },
      h("label", {}, approvePlan, " approve the plan"),
      h("label", {}, approveAnswer, " approve the answer"),
      h("label", {}, "review rounds ", iterations),
      h("span", { class: "spacer" }),
      submit,
    ),
    message,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    message.replaceChildren();
    submit.disabled = true;
    try {
      const accepted = await api("/execute", {
        method: "POST",
        body: { task: task.value, approve_plan: approvePlan.checked, approve_answer: approveAnswer.checked, max_iterations: Number(iterations.value) },
      });
      navigate(`#/tasks/${accepted.task_id}`);
    } catch (error) {
      message.replaceChildren(errorBox(error));
    } finally {
      submit.disabled = false;
    }
  });

  const filter = h("select", { id: "status-filter", "aria-label": "status" }, ...STATUSES.map((value) => h("option", { value }, value || "all statuses")));
  filter.addEventListener("change", () => {
    status = filter.value;
    cursors = [];
    load();
  });

  async function load() {
    try {
      const query = new URLSearchParams({ limit: String(PAGE) });
      const cursor = cursors.at(-1);
      if (cursor) query.set("cursor", cursor);
      if (status) query.set("status", status);
      const page = await api(`/tasks?${query}`);
      const rows = page.items.map((item) =>
        h(
          "tr",
          { class: "task-row", dataset: { id: item.task_id } },
          h("td", {}, badge(item.status)),
          h("td", {}, h("a", { href: `#/tasks/${item.task_id}` }, item.task.length > 90 ? `${item.task.slice(0, 89)}…` : item.task)),
          h("td", { class: "muted" }, item.stop_reason ?? ""),
          h("td", { class: "muted" }, dateTime(item.created_at)),
        ),
      );
      const pager = h(
        "div",
        { class: "row" },
        h("span", { class: "muted" }, `${page.total.toLocaleString()}${page.total_exact ? "" : "+"} task${page.total === 1 && page.total_exact ? "" : "s"}`),
        h("span", { class: "spacer" }),
        h("button", { type: "button", disabled: cursors.length === 0, onclick: () => (cursors.pop(), load()) }, "Newer"),
        h("button", { type: "button", disabled: page.next_cursor === null, onclick: () => (cursors.push(page.next_cursor), load()) }, "Older"),
      );
      list.replaceChildren(
        rows.length > 0
          ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "status"), h("th", {}, "task"), h("th", {}, "stop reason"), h("th", {}, "submitted"))), h("tbody", {}, rows))
          : h("p", { class: "muted" }, "No tasks yet."),
        pager,
      );
    } catch (error) {
      list.replaceChildren(errorBox(error));
    }
  }

  main.replaceChildren(
    h("section", {}, h("h1", {}, "New task"), form),
    h("section", {}, h("div", { class: "row" }, h("h1", {}, "Tasks"), h("span", { class: "spacer" }), filter), list),
  );
  load();
  timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}
