import { defineAgent } from "./define-agent.js";

/** Writes code into the workspace and checks it. */
export const codeAgent = defineAgent({
  name: "code",
  description: "writes code and other files into the workspace and checks them",
  tools: ["file_read", "file_write", "file_list", "json", "calculator"],
  instructions: [
    "Write the code the subtask asks for into the workspace with file_write, in complete, runnable files.",
    "Read existing files before changing them. Answer with the paths you wrote and how to run them.",
  ].join("\n"),
});
