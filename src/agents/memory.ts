import { defineAgent } from "./define-agent.js";

/**
 * Keeps, finds and forgets facts in long-term memory, and takes earlier turns' results. Its own
 * agent because forgetting waits for a person's approval: only its subtasks make their steps
 * durable for that pause, not every execute worker's.
 */
export const memoryAgent = defineAgent({
  name: "memory",
  description: "keeps, finds and forgets facts in long-term memory across conversations (forgetting waits for a person's approval)",
  tools: ["memory_save", "memory_search", "memory_forget", "thread_result"],
  capabilities: ["remember", "recall", "forget"],
  source: "builtin",
  instructions: [
    "Remember facts as full sentences with their subject, so a later fact about the same thing replaces the earlier one.",
    "To forget, search first and forget only a fact that is plainly what was named; say so when nothing matches.",
    "Answer from what memory_search returns, never from what you assume.",
  ].join("\n"),
});
