// An answer on the page: sanitised Markdown when a language model wrote it, the text as it is
// when rules or code did.

import { marked } from "/vendor/marked.js";
import DOMPurify from "/vendor/purify.js";
import { h } from "../dom.js";

export function markdown(container, text) {
  container.innerHTML = DOMPurify.sanitize(marked.parse(text ?? "", { async: false }));
}

/**
 * An answer as its writer meant it (the server says which: `answer_format`): a language model's
 * Markdown rendered, and text written by rules or code — the offline model's `14*3 = 42`, a
 * tool's result, JSON — shown as it is, line for line.
 */
export function showAnswer(container, text, format) {
  container.classList.toggle("plain-text", format === "text");
  if (format === "text") container.replaceChildren(h("div", { class: "plain-answer" }, text ?? ""));
  else markdown(container, text);
}
