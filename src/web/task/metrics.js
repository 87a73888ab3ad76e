// What the run cost: model and tool calls, tokens and time, from the task's metrics.

/** Fills `root` (the `#metrics` line). Returns the cleanup. */
export function mountMetrics(root, { store }) {
  return store.subscribe((change, { view }) => {
    if (change.type !== "view") return;
    const m = view.metrics;
    root.textContent = m ? `${m.llmCalls} model calls · ${m.toolCalls} tool calls · ${m.promptTokens} + ${m.completionTokens} tokens · ${m.durationMs} ms` : "";
  });
}
