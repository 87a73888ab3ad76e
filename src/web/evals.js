// Evals: #/evals lists the caller's evals (and runs a suite pasted as JSON Lines); #/evals/<id>
// shows one — each case's verdict, what failed, and a link to its run's task page — live.

import { api, authHeaders } from "./api.js";
import { badge, dateTime, errorBox, h } from "./dom.js";
import { followEvalEvents } from "./sse.js";

const FINISHED = new Set(["completed", "failed", "cancelled"]);
const PAGE = 20;
const SAMPLE = '{"id":"save","task":"compute 6*7 and save it to answer.txt","expect":{"files":{"answer.txt":"42"}}}';

const percent = (rate) => `${Math.round(rate * 1000) / 10}%`;

/** The verdict of an eval as a badge: whether it reached its minimum pass rate once finished. */
function verdict(item) {
  if (item.status !== "completed") return badge(item.status);
  return h("span", { class: `badge status-${item.meets_min_pass_rate ? "completed" : "failed"}`, "data-status": item.meets_min_pass_rate ? "met" : "not-met" }, item.meets_min_pass_rate ? "met" : "not met");
}

export function renderEvals(main, { navigate }) {
  let offset = 0;
  const list = h("div", { id: "eval-list" });
  const message = h("div");
  const suite = h("textarea", { id: "suite-input", name: "suite", rows: 5, required: true, placeholder: SAMPLE });
  const name = h("input", { id: "suite-name", type: "text", maxlength: 200, placeholder: "suite" });
  const concurrency = h("input", { id: "eval-concurrency", type: "number", min: 1, max: 8, value: 2 });
  const submit = h("button", { type: "submit", class: "primary", id: "submit-eval" }, "Run eval");
  const form = h(
    "form",
    { id: "eval-form", class: "card" },
    h("label", { for: "suite-input" }, "Suite (JSON Lines: one case a line, { id, task, files?, expect? })"),
    suite,
    h("div", { class: "row" }, h("label", {}, "name ", name), h("label", {}, "cases at once ", concurrency), h("span", { class: "spacer" }), submit),
    message,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    message.replaceChildren();
    submit.disabled = true;
    try {
      const body = { suite: suite.value, concurrency: Number(concurrency.value) };
      if (name.value.trim()) body.name = name.value.trim();
      const accepted = await api("/evals", { method: "POST", body });
      navigate(`#/evals/${accepted.eval_id}`);
    } catch (error) {
      message.replaceChildren(errorBox(error));
    } finally {
      submit.disabled = false;
    }
  });

  async function load() {
    try {
      const page = await api(`/evals?${new URLSearchParams({ limit: String(PAGE), offset: String(offset) })}`);
      const rows = page.items.map((item) =>
        h(
          "tr",
          { class: "eval-row", dataset: { id: item.eval_id } },
          h("td", {}, badge(item.status)),
          h("td", {}, h("a", { href: `#/evals/${item.eval_id}` }, item.name)),
          h("td", {}, `${item.passed}/${item.total} passed (${percent(item.pass_rate)})`),
          h("td", {}, verdict(item)),
          h("td", { class: "muted" }, item.provider),
          h("td", { class: "muted" }, dateTime(item.created_at)),
        ),
      );
      const pager = h(
        "div",
        { class: "row" },
        h("span", { class: "muted" }, `${page.total} eval${page.total === 1 ? "" : "s"}`),
        h("span", { class: "spacer" }),
        h("button", { type: "button", disabled: offset === 0, onclick: () => ((offset = Math.max(0, offset - PAGE)), load()) }, "Newer"),
        h("button", { type: "button", disabled: page.next_offset === null, onclick: () => ((offset = page.next_offset ?? offset), load()) }, "Older"),
      );
      list.replaceChildren(
        rows.length > 0
          ? h(
              "table",
              {},
              h("thead", {}, h("tr", {}, h("th", {}, "status"), h("th", {}, "suite"), h("th", {}, "cases"), h("th", {}, "minimum pass rate"), h("th", {}, "model"), h("th", {}, "submitted"))),
              h("tbody", {}, rows),
            )
          : h("p", { class: "muted" }, "No evals yet. `troupe eval` runs one from the command line; paste a suite above to run one here."),
        pager,
      );
    } catch (error) {
      list.replaceChildren(errorBox(error));
    }
  }

  main.replaceChildren(h("section", {}, h("h1", {}, "New eval"), form), h("section", {}, h("h1", {}, "Evals"), list));
  load();
  const timer = setInterval(load, 5000);
  return () => clearInterval(timer);
}

/** A case's failed expectations and its judge, in words. */
function caseDetail(item) {
  const lines = item.failures.map((failure) => h("li", {}, h("strong", {}, failure.expectation), `: ${failure.message}`));
  if (item.judge && !item.judge.judged) lines.push(h("li", { class: "muted" }, `judge: not judged — ${item.judge.reason}`));
  else if (item.judge) lines.push(h("li", {}, `judge: score ${item.judge.score} (needs ${item.judge.minScore}) — ${item.judge.reason}`));
  return lines.length > 0 ? h("ul", { class: "failures" }, lines) : "";
}

export function renderEval(main, evalId) {
  let reloadTimer;
  const title = h("h1", { id: "eval-title" }, "…");
  const status = h("span", { id: "eval-status" });
  const summary = h("p", { id: "eval-summary" });
  const cancel = h("button", { type: "button", id: "cancel-eval", hidden: true }, "Cancel");
  const notice = h("div");
  const cases = h("div", { id: "eval-cases" });

  main.replaceChildren(
    h("p", {}, h("a", { href: "#/evals" }, "← all evals")),
    h("div", { class: "row" }, title, h("span", { class: "spacer" }), status, cancel),
    summary,
    notice,
    h("section", { class: "card" }, h("h2", {}, "Cases"), cases),
  );

  async function load() {
    let view;
    try {
      view = await api(`/evals/${encodeURIComponent(evalId)}`);
    } catch (error) {
      notice.replaceChildren(errorBox(error));
      return;
    }
    title.textContent = view.name;
    status.replaceChildren(badge(view.status), " ", verdict(view));
    cancel.hidden = FINISHED.has(view.status);
    const done = view.passed + view.failed;
    summary.textContent = `${done} of ${view.total} cases done · ${view.passed} passed, ${view.failed} failed (${percent(view.pass_rate)}; minimum ${percent(view.min_pass_rate)}) · ${view.provider}${view.error ? ` · ${view.error}` : ""}`;
    const rows = view.cases.map((item) =>
      h(
        "tr",
        { class: "case-row", dataset: { id: item.id, state: item.state } },
        h("td", {}, item.id),
        h("td", {}, h("span", { class: `badge status-${item.state === "passed" ? "completed" : item.state}`, "data-status": item.state }, item.state)),
        h("td", {}, item.task.length > 90 ? `${item.task.slice(0, 89)}…` : item.task, caseDetail(item)),
        h("td", {}, item.run_id ? h("a", { href: `#/tasks/${item.run_id}`, class: "case-run" }, `run (${item.status ?? "…"})`) : h("span", { class: "muted" }, "—")),
        h("td", { class: "muted" }, item.metrics ? `${item.metrics.llmCalls} calls · ${item.metrics.promptTokens + item.metrics.completionTokens} tokens` : ""),
      ),
    );
    cases.replaceChildren(
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "case"), h("th", {}, "verdict"), h("th", {}, "task and failures"), h("th", {}, "run"), h("th", {}, "cost"))), h("tbody", {}, rows)),
    );
  }

  function reloadSoon() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(load, 100);
  }

  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    try {
      await api(`/evals/${encodeURIComponent(evalId)}/cancel`, { method: "POST" });
    } catch (error) {
      notice.replaceChildren(errorBox(error));
    } finally {
      cancel.disabled = false;
      load();
    }
  });

  load();
  const stream = followEvalEvents(evalId, { headers: authHeaders, onEvent: reloadSoon, onEnd: reloadSoon, onError: () => {} });
  return () => {
    stream.close();
    clearTimeout(reloadTimer);
  };
}
