// What long-term memory gave the planner, and how it was found.

import { h } from "../dom.js";

function render(root, memories, recalled) {
  root.hidden = !recalled || (recalled.items.length === 0 && !recalled.error);
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

/** Fills `root` (the `#memories-card`, hidden when nothing was recalled). Returns the cleanup. */
export function mountMemories(root, { store }) {
  const memories = h("div", { id: "memories" });
  root.replaceChildren(h("h2", {}, "Memories used"), memories);
  return store.subscribe((change, { view }) => {
    if (change.type === "view") render(root, memories, view.memories);
  });
}
