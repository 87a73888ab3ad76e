// Where a task's time went: the Gantt strip of its subtasks, redrawn whenever their times move,
// and four times a second while one runs, so its bar grows in the server's time.

import { drawGantt, isRunning } from "../gantt.js";
import { serverNow } from "./store.js";

/** The events that move a subtask's bar (store.js applies them to `state.timing`). */
const MOVES = new Set(["plan-ready", "subtask-start", "subtask-end", "subtask-skip"]);

/** Draws into `root` (the `#gantt` box). Returns the cleanup, which stops the ticker. */
export function mountGantt(root, { store }) {
  let ticker;
  function draw() {
    const { timing } = store.state;
    drawGantt(root, timing, serverNow(store.state));
    const running = timing.nodes.some((node) => isRunning(node) && node.status === "RUNNING");
    if (running && !ticker) ticker = setInterval(draw, 250);
    if (!running && ticker) {
      clearInterval(ticker);
      ticker = undefined;
    }
  }
  const unsubscribe = store.subscribe((change) => {
    if (change.type === "graph" || (change.type === "event" && MOVES.has(change.event.type))) draw();
  });
  return () => {
    unsubscribe();
    clearInterval(ticker);
  };
}
