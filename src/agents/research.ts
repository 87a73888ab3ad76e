import { defineAgent } from "./define-agent.js";

/** Finds and reads material, then summarises it with its sources. */
export const researchAgent = defineAgent({
  name: "research",
  description: "finds and reads material (workspace files, search) and summarises it with sources; never writes",
  tools: ["file_read", "file_list", "text_stats", "json", "calculator"],
  instructions: [
    "Find what the subtask asks for with your tools, read it, and answer with a concise summary.",
    "Name the files or sources you used. Do not invent facts: if the material is not available, say so.",
  ].join("\n"),
});
