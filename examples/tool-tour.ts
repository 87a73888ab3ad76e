/**
 * Demo 2 — tools: the built-in tools called directly (what `troupe tools call` does), a path that
 * tries to leave the workspace being refused, code in the sandbox, an offline search, a call an
 * agent is not permitted to make, a fetch of a private address refused, the audit trail, and
 * then a task whose plan chains tools across subtasks. All of it works offline.
 *
 *   node dist/examples/tool-tour.js
 */
import { logEvent, openExample } from "./shared.js";
import { EXAMPLE_TASKS } from "./tasks.js";

const troupe = await openExample();
try {
  const show = async (name: string, args: Record<string, unknown>, agent?: string): Promise<void> => {
    const outcome = await troupe.callTool(name, args, agent ? { agent } : {});
    const who = agent ? ` as ${agent}` : "";
    console.log(`${name}${who} ${JSON.stringify(args)}\n  → ${outcome.ok ? outcome.summary : `✗ ${outcome.error.code}: ${outcome.error.message}`}`);
  };
  await show("calculator", { expression: "2 * (3 + 4) + 10 / 5" });
  await show("json", { text: '{"a": 1, "b": [2, 3]}' });
  await show("json", { text: '{"a": 1, "b": }' });
  await show("file_write", { path: "hello.txt", content: "hello workspace" });
  await show("file_read", { path: "hello.txt" });
  await show("file_list", { path: "." });
  await show("file_read", { path: "../../etc/passwd" });
  await show("code_run", { language: "javascript", code: "const squares = input.map((n) => n * n); console.log(squares.join(' ')); squares.reduce((a, b) => a + b)", input: [1, 2, 3, 4] });
  await show("code_run", { language: "javascript", code: "this.constructor.constructor('return process')()" });
  await show("web_search", { query: "hello workspace" });
  await show("file_write", { path: "notes.txt", content: "research may not write" }, "research");
  await show("http_fetch", { url: "http://169.254.169.254/latest/meta-data/" }, "research");
  const stats = await troupe.store.audit.stats();
  console.log(`\naudit: ${stats.total} calls, ${stats.succeeded} succeeded, ${stats.denied} denied (troupe audit list | stats | export)`);

  console.log("\nA task that chains tools through the plan:");
  const result = await troupe.run({ task: EXAMPLE_TASKS.tools }, { onEvent: logEvent });
  console.log(`\n${result.answer}`);
} finally {
  troupe.close();
}
