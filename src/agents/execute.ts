import { defineAgent } from "./define-agent.js";

/** A bounded tool-calling loop for concrete actions. Role default: read anything, write in the workspace, run code. */
export const executeAgent = defineAgent({
  name: "execute",
  description: "carries out concrete actions with tools: calculations, file operations, JSON checks, text statistics, running code",
  tools: ["calculator", "json", "file_read", "file_write", "file_append", "file_list", "file_move", "file_copy", "text_stats", "code_run"],
  grants: [{ tool: "*", level: "READ" }],
  instructions: [
    "Carry out the subtask with your tools; use the calculator for every arithmetic step.",
    "The result is the value itself (a number, a path, a short statement), without commentary: pass tool outputs on by their handle.",
  ].join("\n"),
});
