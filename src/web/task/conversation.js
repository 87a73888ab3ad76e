// The thread's earlier turns, this task last, and a box to add the next turn (a new task on the
// same thread).

import { api } from "../api.js";
import { badge, errorBox, h } from "../dom.js";
import { showAnswer } from "./markdown.js";

/** The earlier turns of the thread, then this task: each its words, its status and its answer. */
function render(conversation, view) {
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

/** Fills `root` (the `#conversation-card`). Returns the cleanup. */
export function mountConversation(root, { store }) {
  const conversation = h("ol", { id: "conversation", class: "conversation" });
  const followUp = h("textarea", { id: "follow-up", rows: 2, maxlength: 5000, placeholder: "a follow-up on this thread: \"save it to result.txt\"" });
  const message = h("div");
  const form = h(
    "form",
    { id: "follow-up-form" },
    followUp,
    h("div", { class: "row" }, h("span", { class: "spacer" }), h("button", { type: "submit", class: "primary", id: "send-follow-up" }, "Continue the conversation")),
    message,
  );
  root.replaceChildren(h("h2", {}, "Conversation"), conversation, form);

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    message.replaceChildren();
    const { view } = store.state;
    if (!view || !followUp.value.trim()) return;
    try {
      const accepted = await api("/execute", { method: "POST", body: { task: followUp.value, thread_id: view.thread_id } });
      location.hash = `#/tasks/${accepted.task_id}`;
    } catch (error) {
      message.replaceChildren(errorBox(error));
    }
  });

  return store.subscribe((change, { view }) => {
    if (change.type === "view") render(conversation, view);
  });
}
