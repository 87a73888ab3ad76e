/**
 * Demo 2 — tools: the built-in tools called directly (what `troupe tools call` does), a path that
 * tries to leave the workspace being refused, and then a task whose plan chains tools across
 * subtasks (the second subtask takes the first one's result). All of it works offline.
 *
 *   node dist/examples/tool-tour.js
 */
import { logEvent, openExample } from "./shared.js";
import { EXAMPLE_TASKS } from "./tasks.js";

const troupe = await openExample();
try {
  const context = { workspace: troupe.workspace, agent: "operator" };
  const show = async (name: string, args: Record<string, unknown>): Promise<void> => {
    const outcome = await troupe.tools.call(name, args, context);
    console.log(`${name} ${JSON.stringify(args)}\n  → ${outcome.ok ? outcome.summary : `refused (${outcome.error.code}): ${outcome.error.message}`}`);
  };
  await show("calculator", { expression: "2 * (3 + 4) + 10 / 5" });
  await show("json", { text: '{"a": 1, "b": [2, 3]}' });
  await show("json", { text: '{"a": 1, "b": }' });
  await show("file_write", { path: "hello.txt", content: "hello workspace" });
  await show("file_read", { path: "hello.txt" });
  await show("file_list", { path: "." });
  await show("file_read", { path: "../../etc/passwd" });

  console.log("\nA task that chains tools through the plan:");
  const result = await troupe.run({ task: EXAMPLE_TASKS.tools }, { onEvent: logEvent });
  console.log(`\n${result.answer}`);
} finally {
  troupe.close();
}
