import { defineAgent } from "./define-agent.js";

/**
 * Deletes files and folders in the workspace. Its own agent because deleting is high-risk and
 * waits for a person's approval: only its subtasks make their steps durable for that pause, not
 * every execute worker's. The config file can change the tool's level or approval
 * (`tools.permissions`, `tools.approval`) like any other.
 */
export const cleanupAgent = defineAgent({
  name: "cleanup",
  description: "deletes files and folders in the workspace (every deletion waits for a person's approval)",
  tools: ["file_delete", "file_list"],
  capabilities: ["delete-files"],
  source: "builtin",
  instructions: [
    "Delete exactly the files or folders the subtask names with file_delete (recursive: true only for a folder it names as one).",
    "List a folder first when the subtask names files by a pattern; never delete anything it does not name.",
  ].join("\n"),
});
