import { defineAgent } from "./define-agent.js";

/** A bounded tool-calling loop for concrete actions. */
export const executeAgent = defineAgent({
  name: "execute",
  description: "carries out concrete actions with tools: calculations, file operations, JSON checks",
  tools: ["calculator", "json", "file_read", "file_write", "file_list", "text_stats"],
  instructions: [
    "Carry out the subtask with your tools; use the calculator for every arithmetic step.",
    "Answer with the result itself (a number, a path, a short statement), without commentary.",
  ].join("\n"),
});
