// The execution graph of a task: drawn from the graph endpoint, or from the plan as soon as it is
// ready, then moved on in place by the stream's events (a node the drawing lacks asks for a reload).

import { errorBox } from "../dom.js";
import { drawGraph, planGraph, setNodeItems, setNodeStatus } from "../graph.js";
import { endStatus, itemsOf } from "./store.js";

/** Draws into `root` (the `#graph` box). Returns the cleanup. */
export function mountGraph(root, { store, reloadSoon }) {
  function onEvent(event, state) {
    switch (event.type) {
      case "plan-ready":
        drawGraph(root, planGraph(event.subtasks));
        break;
      case "subtask-start":
        if (!setNodeStatus(root, event.subtaskId, "RUNNING")) reloadSoon();
        break;
      case "map-item":
        setNodeItems(root, event.subtaskId, itemsOf(state, event.subtaskId));
        break;
      case "subtask-end":
        if (!setNodeStatus(root, event.subtaskId, endStatus(state, event), event.summary || event.error)) reloadSoon();
        // A mapped subtask's final counts are the server's.
        if (itemsOf(state, event.subtaskId)) reloadSoon();
        break;
      case "subtask-skip":
        setNodeStatus(root, event.subtaskId, "SKIPPED", event.reason);
        break;
    }
  }
  return store.subscribe((change, state) => {
    if (change.type === "graph") drawGraph(root, change.graph);
    else if (change.type === "error" && change.of === "graph") root.replaceChildren(errorBox(change.error));
    else if (change.type === "event") onEvent(change.event, state);
  });
}
