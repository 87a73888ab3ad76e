import { defineAgent } from "./define-agent.js";

/** Finds and reads material, then summarises it with its sources. Role default: every read-level tool (files, search, fetch, read-only MCP tools). */
export const researchAgent = defineAgent({
  name: "research",
  description: "finds and reads material (search, web pages, workspace files) and summarises it with sources; never writes",
  tools: ["web_search", "http_fetch", "file_read", "file_list", "text_stats", "json", "calculator"],
  grants: [{ tool: "*", level: "READ" }],
  capabilities: ["search", "read", "summarise"],
  source: "builtin",
  instructions: [
    "Find what the subtask asks for with your tools (web_search first, then read what it finds), and answer with a concise summary.",
    "Name the files, paths or URLs you used. Do not invent facts: if the material is not available, say so.",
  ].join("\n"),
});
