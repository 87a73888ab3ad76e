/**
 * Demo 1 — planning: a task is broken into a graph of subtasks with dependencies, reviewed by the
 * critic, and answered with a decision trace. On the offline model the plan is generic and the
 * answer says a language model is needed; on a real provider the plan and answer are real.
 *
 *   node dist/examples/planning.js
 */
import { logEvent, openExample } from "./shared.js";
import { EXAMPLE_TASKS } from "./tasks.js";

const troupe = await openExample();
try {
  const result = await troupe.run(
    { task: EXAMPLE_TASKS.planning },
    { onEvent: logEvent },
  );
  console.log(`\n${result.answer ?? result.error ?? "(no answer)"}\n`);
  console.log(`status ${result.status} (${result.stopReason}); ${result.metrics.llmCalls} model calls, ${result.metrics.promptTokens + result.metrics.completionTokens} tokens`);
  console.log(`node visits: ${result.trace.nodes.join(" → ")}`);
} finally {
  troupe.close();
}
