/**
 * Demo 3 — code generation: research → code → execute. With a real provider the code worker
 * writes the script into the workspace; the offline model cannot write code from a description,
 * and says so instead of pretending (no canned crawler).
 *
 *   node dist/examples/code-generation.js
 */
import { readdir } from "node:fs/promises";
import { logEvent, openExample } from "./shared.js";
import { EXAMPLE_TASKS } from "./tasks.js";

const troupe = await openExample();
try {
  const result = await troupe.run(
    {
      task: EXAMPLE_TASKS.code,
    },
    { onEvent: logEvent },
  );
  console.log(`\n${result.answer ?? result.error ?? "(no answer)"}\n`);
  console.log(`workspace now holds: ${(await readdir(troupe.workspace)).join(", ") || "(nothing)"}`);
  const writes = result.trace.toolCalls.filter((call) => call.tool === "file_write");
  console.log(`file_write calls in the trace: ${writes.length}`);
} finally {
  troupe.close();
}
