import type { ToolDefinition } from "../define-tool.js";
import { ToolRegistry, type ToolRegistryOptions } from "../registry.js";
import { calculatorTool } from "./calculator.js";
import { fileListTool } from "./file-list.js";
import { fileReadTool } from "./file-read.js";
import { fileWriteTool } from "./file-write.js";
import { jsonTool } from "./json.js";
import { textStatsTool } from "./text-stats.js";

/** The built-in tools, in the order they are listed. */
export const BUILTIN_TOOLS: readonly ToolDefinition[] = [
  calculatorTool as ToolDefinition,
  jsonTool as ToolDefinition,
  fileReadTool as ToolDefinition,
  fileWriteTool as ToolDefinition,
  fileListTool as ToolDefinition,
  textStatsTool as ToolDefinition,
];

/** A registry holding every built-in tool. */
export function createBuiltinRegistry(options: ToolRegistryOptions = {}): ToolRegistry {
  const registry = new ToolRegistry(options);
  for (const tool of BUILTIN_TOOLS) registry.register(tool);
  return registry;
}
