// The run's shared board: every message posted, as it is posted (each once, however often the
// stream replays it).

import { h, time } from "../dom.js";
import { audienceOf } from "./describe.js";

/** Fills `root` (the Board card, hidden until a message). Returns the cleanup. */
export function mountBoard(root, { store }) {
  const board = h("ol", { id: "board", class: "board" });
  root.replaceChildren(h("h2", {}, "Board"), board);
  return store.subscribe((change) => {
    if (change.type !== "event" || change.event.type !== "board-post") return;
    const { message } = change.event;
    if (board.querySelector(`[data-id="${CSS.escape(message.id)}"]`)) return;
    root.hidden = false;
    board.append(h("li", { dataset: { id: message.id, from: message.from } }, h("time", {}, time(message.at)), " ", h("b", {}, `${message.from} (${message.agent}) → ${audienceOf(message.audience)}`), ": ", message.text));
  });
}
