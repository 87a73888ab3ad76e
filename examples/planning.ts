/**
 * Demo 1 — planning: a task is broken into a graph of subtasks with dependencies, reviewed by the
 * critic, and answered with a decision trace. On the offline model the plan is generic and the
 * answer says a language model is needed; on a real provider the plan and answer are real.
 *
 *   node dist/examples/planning.js
 */
import { logEvent, openExample } from "./shared.js";

const troupe = await openExample();
try {
  const result = await troupe.run(
    { task: "Make a six-week plan for learning Python: topics for each week, exercises, and how to check what was learned." },
    { onEvent: logEvent },
  );
  console.log(`\n${result.answer ?? result.error ?? "(no answer)"}\n`);
  console.log(`status ${result.status} (${result.stopReason}); ${result.metrics.llmCalls} model calls, ${result.metrics.promptTokens + result.metrics.completionTokens} tokens`);
  console.log(`node visits: ${result.trace.nodes.join(" → ")}`);
} finally {
  troupe.close();
}
