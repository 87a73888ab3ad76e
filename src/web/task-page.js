// A task: its execution graph drawn live from the event stream, under it its subtasks on a time
// axis with the critical path, a timeline of events, the answer (sanitised Markdown when a language
// model wrote it, the text as it is when rules or code did), and the buttons a person needs when
// the run waits for them.
//
// The page is a composition: one store (task/store.js) holds the state, each panel under task/
// draws the part of the page it owns from it, and this file loads the task, follows its event
// stream into the store and hands every panel the same context.

import { api, authHeaders } from "./api.js";
import { h } from "./dom.js";
import { followEvents } from "./sse.js";
import { mountAnswer } from "./task/answer.js";
import { mountApproval } from "./task/approval.js";
import { mountBoard } from "./task/board.js";
import { mountConversation } from "./task/conversation.js";
import { mountGantt } from "./task/gantt-panel.js";
import { mountGraph } from "./task/graph-panel.js";
import { mountHeader } from "./task/header.js";
import { mountMemories } from "./task/memories.js";
import { mountMetrics } from "./task/metrics.js";
import { mountRerun } from "./task/rerun.js";
import { createTaskStore } from "./task/store.js";
import { mountTimeline } from "./task/timeline.js";

/** The events after which the task itself (its status, interrupts, plan) is loaded again. */
const RELOADS = new Set(["plan-ready", "run-start", "approval-request", "run-end"]);

export function renderTask(main, taskId) {
  const store = createTaskStore(taskId);
  let reloadTimer;

  async function load() {
    let view;
    try {
      view = await api(`/tasks/${encodeURIComponent(taskId)}`);
    } catch (error) {
      return store.failed("task", error);
    }
    store.setView(view);
  }

  async function loadGraph() {
    let graph;
    try {
      graph = await api(`/tasks/${encodeURIComponent(taskId)}/graph`);
    } catch (error) {
      return store.failed("graph", error);
    }
    store.setGraph(graph);
  }

  function reloadSoon() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => {
      load();
      loadGraph();
    }, 150);
  }

  // Each panel's root, in the page's order.
  const header = h("div", { class: "task-header" });
  const approval = h("section", { id: "approval", class: "card attention", hidden: true });
  const graph = h("div", { id: "graph", class: "graph-box" });
  const gantt = h("div", { id: "gantt", class: "gantt-box" });
  const rerun = h("section", { class: "card", id: "rerun-card", hidden: true });
  const answer = h("section", { class: "card", hidden: true });
  const metrics = h("p", { id: "metrics", class: "muted" });
  const board = h("section", { class: "card", hidden: true });
  const memories = h("section", { class: "card", id: "memories-card", hidden: true });
  const conversation = h("section", { class: "card", id: "conversation-card" });
  const timeline = h("section", { class: "card" });
  main.replaceChildren(
    header,
    approval,
    h("section", { class: "card" }, h("h2", {}, "Execution graph"), graph, h("h3", { class: "gantt-heading" }, "Where the time went"), gantt),
    rerun,
    answer,
    metrics,
    board,
    memories,
    conversation,
    timeline,
  );

  const context = { store, load, reloadSoon };
  const panels = [
    [mountHeader, header],
    [mountApproval, approval],
    [mountGraph, graph],
    [mountGantt, gantt],
    [mountRerun, rerun],
    [mountAnswer, answer],
    [mountMetrics, metrics],
    [mountBoard, board],
    [mountMemories, memories],
    [mountConversation, conversation],
    [mountTimeline, timeline],
  ];
  const cleanups = panels.map(([mount, root]) => mount(root, context));

  load();
  loadGraph();
  // The one place the stream is read: each event goes into the store, which tells the panels.
  const onEvent = (event) => {
    store.dispatch(event);
    if (RELOADS.has(event.type)) reloadSoon();
  };
  const stream = followEvents(taskId, { headers: authHeaders, onEvent, onEnd: reloadSoon, onError: () => {} });
  return () => {
    stream.close();
    clearTimeout(reloadTimer);
    for (const cleanup of cleanups) cleanup();
  };
}
