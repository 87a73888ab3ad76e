// A task: its execution graph drawn live from the event stream, under it its subtasks on a time
// axis with the critical path, a timeline of events, the answer (sanitised Markdown when a language
// model wrote it, the text as it is when rules or code did), and the buttons a person needs when
// the run waits for them.

import { marked } from "/vendor/marked.js";
import DOMPurify from "/vendor/purify.js";
import { api, authHeaders } from "./api.js";
import { badge, errorBox, h, time } from "./dom.js";
import { drawGantt, isRunning, timingOf } from "./gantt.js";
import { drawGraph, planGraph, setNodeItems, setNodeStatus } from "./graph.js";
import { followEvents } from "./sse.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** A subtask-end status (the plan's) as the execution graph's. */
const GRAPH_STATUS = { done: "SUCCESS", failed: "FAILED", skipped: "SKIPPED", pending: "PENDING", running: "RUNNING" };

function markdown(container, text) {
  container.innerHTML = DOMPurify.sanitize(marked.parse(text ?? "", { async: false }));
}

/**
 * An answer as its writer meant it (the server says which: `answer_format`): a language model's
 * Markdown rendered, and text written by rules or code — the offline model's `14*3 = 42`, a
 * tool's result, JSON — shown as it is, line for line.
 */
function showAnswer(container, text, format) {
  container.classList.toggle("plain-text", format === "text");
  if (format === "text") container.replaceChildren(h("div", { class: "plain-answer" }, text ?? ""));
  else markdown(container, text);
}

/** Whether a subtask ran (it finished or failed), so a fork can run it again; one never started is not offered. */
function ran(subtask) {
  return subtask.status === "done" || subtask.status === "failed";
}

/** A message's audience in words, as the CLI says it. */
function audienceOf(audience) {
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
function describe(event) {
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

export function renderTask(main, taskId) {
  let view;
  let liveAnswer = "";
  let reloadTimer;
  /** The strip's subtasks with their times and the critical path: from the graph endpoint, moved on by events. */
  let timing = timingOf(null);
  /** Server clock minus this browser's, from the latest event's `at`, so a running bar grows in the server's time. */
  let clockOffset;
  let ticker;
  /** Finished items of each mapped subtask, by index (map-item events). */
  const tallies = new Map();
  const title = h("h1", { id: "task-title" }, "…");
  const status = h("span", { id: "task-status" });
  const step = h("span", { id: "task-step", class: "muted" });
  const cancel = h("button", { type: "button", id: "cancel-task", hidden: true }, "Cancel");
  const notice = h("div");
  /** For a fork: the task it re-runs, and from where. */
  const origin = h("p", { id: "forked-from", class: "muted", hidden: true });
  const graph = h("div", { id: "graph", class: "graph-box" });
  const gantt = h("div", { id: "gantt", class: "gantt-box" });
  const approval = h("section", { id: "approval", class: "card attention", hidden: true });
  const answer = h("div", { id: "answer", class: "markdown" });
  const answerSection = h("section", { class: "card", hidden: true }, h("h2", {}, "Answer"), answer);
  const metrics = h("p", { id: "metrics", class: "muted" });
  const timeline = h("ol", { id: "timeline", class: "timeline" });
  /** The run's shared board: every message posted, as it is posted. */
  const board = h("ol", { id: "board", class: "board" });
  const boardSection = h("section", { class: "card", hidden: true }, h("h2", {}, "Board"), board);
  // The thread's earlier turns, and a box to add the next one; the memories the planner was given.
  const conversation = h("ol", { id: "conversation", class: "conversation" });
  const followUp = h("textarea", { id: "follow-up", rows: 2, maxlength: 5000, placeholder: "a follow-up on this thread: \"save it to result.txt\"" });
  const followUpMessage = h("div");
  const followUpForm = h(
    "form",
    { id: "follow-up-form" },
    followUp,
    h("div", { class: "row" }, h("span", { class: "spacer" }), h("button", { type: "submit", class: "primary", id: "send-follow-up" }, "Continue the conversation")),
    followUpMessage,
  );
  const conversationSection = h("section", { class: "card", id: "conversation-card" }, h("h2", {}, "Conversation"), conversation, followUpForm);
  // Time travel: each subtask of a stopped task can be re-run, with what depends on it, on a new thread (a fork).
  const rerunList = h("ol", { id: "rerun-list", class: "plan" });
  const rerunMessage = h("div");
  const rerunSection = h(
    "section",
    { class: "card", id: "rerun-card", hidden: true },
    h("h2", {}, "Subtasks"),
    h("p", { class: "muted" }, "Re-run from a subtask: a new task on a new thread keeps the results before it and runs it and what depends on it again; this task stays as it is."),
    rerunList,
    rerunMessage,
  );
  const memories = h("div", { id: "memories" });
  const memoriesSection = h("section", { class: "card", id: "memories-card", hidden: true }, h("h2", {}, "Memories used"), memories);

  main.replaceChildren(
    h("p", {}, h("a", { href: "#/" }, "← all tasks")),
    h("div", { class: "row" }, title, h("span", { class: "spacer" }), status, cancel),
    h("div", { class: "row" }, step),
    origin,
    notice,
    approval,
    h("section", { class: "card" }, h("h2", {}, "Execution graph"), graph, h("h3", { class: "gantt-heading" }, "Where the time went"), gantt),
    rerunSection,
    answerSection,
    metrics,
    boardSection,
    memoriesSection,
    conversationSection,
    h("section", { class: "card" }, h("h2", {}, "Timeline"), timeline),
  );

  followUpForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    followUpMessage.replaceChildren();
    if (!view || !followUp.value.trim()) return;
    try {
      const accepted = await api("/execute", { method: "POST", body: { task: followUp.value, thread_id: view.thread_id } });
      location.hash = `#/tasks/${accepted.task_id}`;
    } catch (error) {
      followUpMessage.replaceChildren(errorBox(error));
    }
  });

  /** The earlier turns of the thread, then this task: each its words, its status and its answer. */
  function renderConversation() {
    const turns = [...(view.conversation ?? []), { task_id: view.task_id, task: view.task, status: view.status, answer: view.result?.answer ?? null, answer_format: view.result?.answer_format ?? null, current: true }];
    conversation.replaceChildren(
      ...turns.map((turn) => {
        const reply = h("div", { class: "markdown turn-answer" });
        if (turn.answer) showAnswer(reply, turn.answer, turn.answer_format);
        return h(
          "li",
          { class: `turn${turn.current ? " current" : ""}`, dataset: { id: turn.task_id } },
          h("div", { class: "row" }, turn.current ? h("b", {}, turn.task) : h("a", { href: `#/tasks/${turn.task_id}` }, turn.task), h("span", { class: "spacer" }), badge(turn.status)),
          turn.answer && !turn.current ? reply : "",
        );
      }),
    );
  }

  /** A button that forks the task from a subtask: it and what depends on it run again on a new thread. */
  function rerunButton(subtask) {
    const onclick = async (event) => {
      event.target.disabled = true;
      rerunMessage.replaceChildren();
      try {
        const forked = await api(`/tasks/${encodeURIComponent(taskId)}/fork`, { method: "POST", body: { from: subtask.id } });
        location.hash = `#/tasks/${forked.task_id}`;
      } catch (error) {
        event.target.disabled = false;
        rerunMessage.replaceChildren(errorBox(error));
      }
    };
    return h("button", { type: "button", class: "rerun", id: `rerun-${subtask.id}`, onclick }, "Re-run from here");
  }

  /** The plan's subtasks (once the task has stopped), each that ran with a button to re-run from it; one that never ran has nothing to re-run. */
  function renderRerun() {
    const plan = view.plan ?? [];
    const stopped = !["queued", "running"].includes(view.status);
    rerunSection.hidden = plan.length === 0 || !stopped;
    rerunList.replaceChildren(
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
  }

  /** A fork says what it re-runs: the original task (a link), from which subtask or checkpoint. */
  function renderOrigin() {
    const forked = view.forked_from;
    origin.hidden = !forked;
    if (!forked) return origin.replaceChildren();
    const from = forked.subtask_id ? `from subtask ${forked.subtask_id}` : `from checkpoint ${forked.checkpoint_id}`;
    origin.replaceChildren("A re-run of ", h("a", { href: `#/tasks/${encodeURIComponent(forked.task_id)}`, id: "forked-from-link" }, forked.task_id), ` ${from}: the results before it were kept; that task stays as it was.`);
  }

  /** What long-term memory gave the planner, and how it was found. */
  function renderMemories() {
    const recalled = view.memories;
    memoriesSection.hidden = !recalled || (recalled.items.length === 0 && !recalled.error);
    if (!recalled) return memories.replaceChildren();
    if (recalled.error) return memories.replaceChildren(h("p", { class: "error", role: "alert" }, `long-term memory could not be read: ${recalled.error}`));
    memories.replaceChildren(
      h("p", { class: "muted" }, `found by ${recalled.retrieval ?? "?"} retrieval`),
      h(
        "ul",
        { class: "memory-list" },
        // A fact saved from untrusted data was given to the planner by id only: marked, with its sources.
        ...recalled.items.map((item) =>
          h("li", { class: "memory", dataset: { id: item.id } }, h("code", {}, item.id), " ", ...(item.untrusted ? [h("strong", { class: "untrusted", title: item.untrusted }, "untrusted"), " "] : []), item.text),
        ),
      ),
    );
  }

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
    if (view.result?.answer) {
      answerSection.hidden = false;
      showAnswer(answer, view.result.answer, view.result.answer_format);
    } else if (view.error) {
      answerSection.hidden = false;
      answer.replaceChildren(h("p", { class: "error" }, `Error: ${view.error}`));
    }
    renderOrigin();
    const m = view.metrics;
    metrics.textContent = m ? `${m.llmCalls} model calls · ${m.toolCalls} tool calls · ${m.promptTokens} + ${m.completionTokens} tokens · ${m.durationMs} ms` : "";
    renderConversation();
    renderRerun();
    renderMemories();
    renderApproval();
  }

  async function loadGraph() {
    try {
      const drawn = await api(`/tasks/${encodeURIComponent(taskId)}/graph`);
      drawGraph(graph, drawn);
      timing = timingOf(drawn);
      drawTiming();
    } catch (error) {
      graph.replaceChildren(errorBox(error));
    }
  }

  /** Redraws the strip; while a subtask runs, again four times a second, so its bar grows. */
  function drawTiming() {
    drawGantt(gantt, timing, Date.now() + (clockOffset ?? 0));
    const running = timing.nodes.some((node) => isRunning(node) && node.status === "RUNNING");
    if (running && !ticker) ticker = setInterval(drawTiming, 250);
    if (!running && ticker) {
      clearInterval(ticker);
      ticker = undefined;
    }
  }

  /** Moves one subtask of the strip on after an event. */
  function setTiming(id, change) {
    const node = timing.nodes.find((item) => item.id === id);
    if (!node) return;
    Object.assign(node, change);
    drawTiming();
  }

  function reloadSoon() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => {
      load();
      loadGraph();
    }, 150);
  }

  async function decide(body, card = approval) {
    approval.querySelectorAll("button").forEach((button) => (button.disabled = true));
    try {
      await api(`/tasks/${encodeURIComponent(taskId)}/resume`, { method: "POST", body });
      approval.hidden = true;
      shownApproval = "";
      await load();
    } catch (error) {
      card.append(errorBox(error));
      approval.querySelectorAll("button").forEach((button) => (button.disabled = false));
    }
  }

  /**
   * Tool calls waiting for approval (issue 6): one card per call, since parallel subtasks may
   * wait at once; each answers its own interrupt by id. Approve or reject (with feedback) only.
   */
  function renderToolApprovals(pending) {
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

  /** One input of a server's form, built from its field's schema (the kinds MCP forms have). */
  function formField(name, schema, required) {
    const label = `${schema.title ?? name}${required ? " *" : ""}`;
    const choices = schema.type === "array" ? (schema.items?.anyOf ?? (schema.items?.enum ?? []).map((value) => ({ const: value, title: value }))) : (schema.oneOf ?? (schema.enum ?? []).map((value, index) => ({ const: value, title: schema.enumNames?.[index] ?? value })));
    let input;
    let read;
    if (schema.type === "boolean") {
      input = h("input", { type: "checkbox", name, ...(schema.default === true ? { checked: true } : {}) });
      read = () => input.checked;
    } else if (schema.type === "array") {
      const boxes = choices.map((choice) => h("label", { class: "choice" }, h("input", { type: "checkbox", value: choice.const, ...((schema.default ?? []).includes(choice.const) ? { checked: true } : {}) }), ` ${choice.title}`));
      input = h("span", { class: "choices" }, ...boxes);
      read = () => boxes.map((box) => box.querySelector("input")).filter((box) => box.checked).map((box) => box.value);
    } else if (choices.length > 0) {
      input = h("select", { name }, ...(required ? [] : [h("option", { value: "" }, "")]), ...choices.map((choice) => h("option", { value: choice.const, ...(choice.const === schema.default ? { selected: true } : {}) }, choice.title)));
      read = () => (input.value === "" ? undefined : input.value);
    } else {
      const numeric = schema.type === "number" || schema.type === "integer";
      input = h("input", { type: numeric ? "number" : "text", name, ...(schema.default !== undefined ? { value: String(schema.default) } : {}) });
      read = () => (input.value === "" ? undefined : numeric ? Number(input.value) : input.value);
    }
    return { row: h("label", { class: "field" }, h("span", {}, label), input, schema.description ? h("small", { class: "muted" }, ` ${schema.description}`) : ""), name, read };
  }

  /**
   * A question an MCP server put to a person mid-call (issue 36): its own card, never an approval
   * of troupe's. The server's words are shown as text, marked as coming from it; the form is built
   * from its fields, and the answer is checked against them by the server of troupe's before the
   * run goes on (a wrong one comes back as an error here).
   */
  function renderElicitation(interrupt) {
    const { server, tool, agent, message, requestedSchema } = interrupt.payload;
    const required = new Set(requestedSchema?.required ?? []);
    const fields = Object.entries(requestedSchema?.properties ?? {}).map(([name, schema]) => formField(name, schema, required.has(name)));
    const card = h("div", { class: "elicitation", dataset: { interruptId: interrupt.id ?? "", server: String(server ?? "") } });
    const content = () => Object.fromEntries(fields.map((field) => [field.name, field.read()]).filter(([, value]) => value !== undefined));
    const ids = interrupt.id ? { interrupt_id: interrupt.id } : {};
    card.append(
      h("h3", {}, `The MCP server "${server ?? "?"}" asks a question`),
      h("p", { class: "source" }, `Its words, not troupe's, during ${agent ?? "an agent"}'s call to ${tool ?? "a tool"}: answering approves nothing of troupe's.`),
      h("blockquote", { class: "untrusted-text" }, String(message ?? "")),
      ...fields.map((field) => field.row),
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", class: "primary", id: "send-form", onclick: () => decide({ decision: "answer", content: content(), ...ids }, card) }, "Send"),
        h("button", { type: "button", id: "decline-form", onclick: () => decide({ decision: "reject", ...ids }, card) }, "Decline"),
      ),
    );
    approval.replaceChildren(h("h2", {}, "A tool server asks you something"), card);
  }

  /** What the approval card shows, so a reload that changes nothing keeps what the person is typing. */
  let shownApproval = "";

  function renderApproval() {
    const interrupt = view?.status === "interrupted" ? view.interrupt : null;
    approval.hidden = !interrupt;
    const shown = interrupt ? JSON.stringify([interrupt, view.interrupts ?? []]) : "";
    if (shown === shownApproval && approval.childElementCount > 0) return;
    shownApproval = shown;
    if (!interrupt) return approval.replaceChildren();
    if (interrupt.kind === "tool-approval") {
      const pending = (view.interrupts ?? []).filter((item) => item.kind === "tool-approval");
      return renderToolApprovals(pending.length > 0 ? pending : [interrupt]);
    }
    if (interrupt.kind === "mcp-elicitation") return renderElicitation((view.interrupts ?? []).find((item) => item.kind === "mcp-elicitation") ?? interrupt);
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
      ? JSON.stringify(
          plan.map(({ id, label, agent, dependsOn, args, tool, mapOver, tools, capability }) => ({ id, label, agent, dependsOn, args, ...(tool ? { tool } : {}), ...(mapOver ? { mapOver } : {}), ...(tools ? { tools } : {}), ...(capability ? { capability } : {}) })),
          null,
          2,
        )
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

  /** Succeeded and failed items of a mapped subtask so far. */
  function itemsOf(subtaskId) {
    const tally = tallies.get(subtaskId);
    if (!tally) return undefined;
    const statuses = [...tally.items.values()];
    return { total: tally.total, succeeded: statuses.filter((status) => status === "success").length, failed: statuses.filter((status) => status === "error").length };
  }

  function onEvent(event) {
    // The largest is the latest event's: earlier ones replayed on connect are older than they look.
    clockOffset = Math.max(clockOffset ?? Number.NEGATIVE_INFINITY, event.at - Date.now());
    // Answer tokens build the answer below; successful map items are counted on their node; steps are the status line's.
    const quiet = event.type === "answer-token" || event.type === "step-start" || event.type === "step-end" || (event.type === "map-item" && event.status === "success");
    if (!quiet) timeline.append(h("li", { class: `event event-${event.type}`, dataset: { seq: event.seq, type: event.type } }, h("time", {}, time(event.at)), " ", describe(event)));
    switch (event.type) {
      case "plan-ready":
        tallies.clear();
        drawGraph(graph, planGraph(event.subtasks));
        timing = timingOf(planGraph(event.subtasks));
        drawTiming();
        reloadSoon();
        break;
      case "subtask-start":
        if (!setNodeStatus(graph, event.subtaskId, "RUNNING")) reloadSoon();
        setTiming(event.subtaskId, { status: "RUNNING", startedAt: event.at, endedAt: undefined });
        step.textContent = `running ${event.subtaskId}`;
        break;
      case "map-item": {
        const tally = tallies.get(event.subtaskId) ?? { total: event.total, items: new Map() };
        tally.total = event.total;
        tally.items.set(event.index, event.status);
        tallies.set(event.subtaskId, tally);
        setNodeItems(graph, event.subtaskId, itemsOf(event.subtaskId));
        break;
      }
      case "subtask-end": {
        // A map with failed items is a partial success; the server's graph (reloaded next) has the final word.
        const items = itemsOf(event.subtaskId);
        const status = event.status === "done" && items && items.failed > 0 ? "PARTIAL_SUCCESS" : (GRAPH_STATUS[event.status] ?? "PENDING");
        if (!setNodeStatus(graph, event.subtaskId, status, event.summary || event.error)) reloadSoon();
        setTiming(event.subtaskId, { status, endedAt: event.at });
        if (items) reloadSoon();
        break;
      }
      case "subtask-skip":
        setNodeStatus(graph, event.subtaskId, "SKIPPED", event.reason);
        setTiming(event.subtaskId, { status: "SKIPPED", startedAt: undefined, endedAt: undefined });
        break;
      case "board-post": {
        const { message } = event;
        if (board.querySelector(`[data-id="${CSS.escape(message.id)}"]`)) break;
        boardSection.hidden = false;
        board.append(
          h("li", { dataset: { id: message.id, from: message.from } }, h("time", {}, time(message.at)), " ", h("b", {}, `${message.from} (${message.agent}) → ${audienceOf(message.audience)}`), ": ", message.text),
        );
        break;
      }
      case "answer-token":
        liveAnswer += event.text;
        answerSection.hidden = false;
        markdown(answer, liveAnswer);
        break;
      case "answer":
        liveAnswer = event.text;
        answerSection.hidden = false;
        showAnswer(answer, event.text, event.format);
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
    clearInterval(ticker);
  };
}
