// The task page's state, in one object the page owns, and the one place it changes: each change
// is published to the panels that subscribed (a tiny store, no framework). Three kinds of change:
//
// - `{ type: "view" }`: the task as GET /tasks/:id returns it is in `state.view`;
// - `{ type: "graph", graph }`: the execution graph from GET /tasks/:id/graph (its times in `state.timing`);
// - `{ type: "event", event }`: one event of the task's stream, already applied to the state;
// - `{ type: "error", of: "task" | "graph", error }`: loading the task or its graph failed.
//
// Panels read the state when told and keep only what is theirs (their DOM).

import { timingOf } from "../gantt.js";
import { planGraph } from "../graph.js";

/** A subtask-end status (the plan's) as the execution graph's. */
const GRAPH_STATUS = { done: "SUCCESS", failed: "FAILED", skipped: "SKIPPED", pending: "PENDING", running: "RUNNING" };

/** The state of a task page before anything was loaded. */
export function initialTaskState(taskId) {
  return {
    taskId,
    /** The task (GET /tasks/:id), once loaded. */
    view: undefined,
    /** The strip's subtasks with their times and the critical path: from the graph endpoint, moved on by events. */
    timing: timingOf(null),
    /** Server clock minus this browser's, from the latest event's `at`, so a running bar grows in the server's time. */
    clockOffset: undefined,
    /** Finished items of each mapped subtask: subtask id → { total, items: index → status } (map-item events). */
    tallies: new Map(),
    /** The answer as its tokens stream in, or as the answer event gave it. */
    liveAnswer: "",
  };
}

/** Succeeded and failed items of a mapped subtask so far, or undefined when it is not mapped. */
export function itemsOf(state, subtaskId) {
  const tally = state.tallies.get(subtaskId);
  if (!tally) return undefined;
  const statuses = [...tally.items.values()];
  return { total: tally.total, succeeded: statuses.filter((status) => status === "success").length, failed: statuses.filter((status) => status === "error").length };
}

/** The graph's status for a subtask-end: a map with failed items is a partial success (the server's graph, reloaded next, has the final word). */
export function endStatus(state, event) {
  const items = itemsOf(state, event.subtaskId);
  return event.status === "done" && items && items.failed > 0 ? "PARTIAL_SUCCESS" : (GRAPH_STATUS[event.status] ?? "PENDING");
}

/** The now of the server's clock, as far as the events tell it. */
export function serverNow(state) {
  return Date.now() + (state.clockOffset ?? 0);
}

/** Moves one subtask of the strip on. */
function setTiming(state, id, change) {
  const node = state.timing.nodes.find((item) => item.id === id);
  if (node) Object.assign(node, change);
}

/** What an event changes in the state (the panels draw it after). */
export function applyEvent(state, event) {
  // The largest is the latest event's: earlier ones replayed on connect are older than they look.
  state.clockOffset = Math.max(state.clockOffset ?? Number.NEGATIVE_INFINITY, event.at - Date.now());
  switch (event.type) {
    case "plan-ready":
      state.tallies.clear();
      state.timing = timingOf(planGraph(event.subtasks));
      break;
    case "subtask-start":
      setTiming(state, event.subtaskId, { status: "RUNNING", startedAt: event.at, endedAt: undefined });
      break;
    case "map-item": {
      const tally = state.tallies.get(event.subtaskId) ?? { total: event.total, items: new Map() };
      tally.total = event.total;
      tally.items.set(event.index, event.status);
      state.tallies.set(event.subtaskId, tally);
      break;
    }
    case "subtask-end":
      setTiming(state, event.subtaskId, { status: endStatus(state, event), endedAt: event.at });
      break;
    case "subtask-skip":
      setTiming(state, event.subtaskId, { status: "SKIPPED", startedAt: undefined, endedAt: undefined });
      break;
    case "answer-token":
      state.liveAnswer += event.text;
      break;
    case "answer":
      state.liveAnswer = event.text;
      break;
  }
}

/**
 * The page's store: `state`, `subscribe(listener)` (returns the unsubscribe; a listener gets each
 * change and the state), and the ways the state changes, each published after it is made.
 */
export function createTaskStore(taskId) {
  const state = initialTaskState(taskId);
  const listeners = new Set();
  const publish = (change) => {
    for (const listener of [...listeners]) listener(change, state);
  };
  return {
    state,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    setView(view) {
      state.view = view;
      publish({ type: "view" });
    },
    setGraph(graph) {
      state.timing = timingOf(graph);
      publish({ type: "graph", graph });
    },
    dispatch(event) {
      applyEvent(state, event);
      publish({ type: "event", event });
    },
    failed(of, error) {
      publish({ type: "error", of, error });
    },
  };
}
