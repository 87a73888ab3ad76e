// The answer: built from its tokens as they stream, replaced by the answer event, and by the
// task's result (or its error) whenever the task is loaded.

import { h } from "../dom.js";
import { markdown, showAnswer } from "./markdown.js";

/** Fills `root` (the Answer card, hidden until there is one). Returns the cleanup. */
export function mountAnswer(root, { store }) {
  const answer = h("div", { id: "answer", class: "markdown" });
  root.replaceChildren(h("h2", {}, "Answer"), answer);
  return store.subscribe((change, { view, liveAnswer }) => {
    if (change.type === "event" && change.event.type === "answer-token") {
      root.hidden = false;
      markdown(answer, liveAnswer);
    } else if (change.type === "event" && change.event.type === "answer") {
      root.hidden = false;
      showAnswer(answer, change.event.text, change.event.format);
    } else if (change.type === "view" && view.result?.answer) {
      root.hidden = false;
      showAnswer(answer, view.result.answer, view.result.answer_format);
    } else if (change.type === "view" && view.error) {
      root.hidden = false;
      answer.replaceChildren(h("p", { class: "error" }, `Error: ${view.error}`));
    }
  });
}
