import { defineAgent } from "./define-agent.js";

/** Writes code into the workspace, runs it in the sandbox and fixes it. Role default: write in the workspace, run code, read. */
export const codeAgent = defineAgent({
  name: "code",
  description: "writes code and other files into the workspace, runs it in the sandbox (code_run) and fixes it on failure",
  tools: ["file_read", "file_write", "file_append", "file_list", "file_move", "code_run", "json", "calculator", "web_search"],
  capabilities: ["write-code", "run-code", "write-files"],
  source: "builtin",
  instructions: [
    "Write the code the subtask asks for into the workspace with file_write, in complete, runnable files.",
    "Run it with code_run (python or node scripts see the workspace at /workspace; javascript runs in an isolated interpreter) and fix it until it works.",
    "Read existing files before changing them. Answer with the paths you wrote, how to run them, and what the run printed.",
  ].join("\n"),
});
