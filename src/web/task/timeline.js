// The timeline: one line per event of the task's stream, in order, with its time.

import { h, time } from "../dom.js";
import { describe } from "./describe.js";

/** Answer tokens build the answer; successful map items are counted on their node; steps are the status line's. */
function quiet(event) {
  return event.type === "answer-token" || event.type === "step-start" || event.type === "step-end" || (event.type === "map-item" && event.status === "success");
}

/** Fills `root` (the Timeline card). Returns the cleanup. */
export function mountTimeline(root, { store }) {
  const timeline = h("ol", { id: "timeline", class: "timeline" });
  root.replaceChildren(h("h2", {}, "Timeline"), timeline);
  return store.subscribe((change) => {
    if (change.type !== "event" || quiet(change.event)) return;
    const { event } = change;
    timeline.append(h("li", { class: `event event-${event.type}`, dataset: { seq: event.seq, type: event.type } }, h("time", {}, time(event.at)), " ", describe(event)));
  });
}
