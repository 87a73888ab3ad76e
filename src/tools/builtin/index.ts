import { ToolError } from "../../core/errors.js";
import type { Memory } from "../../core/memory.js";
import type { ToolDefinition } from "../define-tool.js";
import { ToolRegistry, type ToolRegistryOptions } from "../registry.js";
import { boardPostTool, boardReadTool } from "./board.js";
import { calculatorTool } from "./calculator.js";
import { type CodeRunOptions, createCodeRunTool } from "./code-run.js";
import { fileCopyTool } from "./file-copy.js";
import { fileDeleteTool } from "./file-delete.js";
import { FILE_EFFECTS } from "./file-effects.js";
import { fileListTool } from "./file-list.js";
import { fileMoveTool } from "./file-move.js";
import { fileReadTool } from "./file-read.js";
import { fileAppendTool, fileWriteTool } from "./file-write.js";
import { createHttpFetchTool, type HttpFetchOptions } from "./http-fetch.js";
import { jsonTool } from "./json.js";
import { createMemoryTools, type NamespaceOf } from "./memory.js";
import { createThreadResultTool, type ThreadResults } from "./thread-result.js";
import { textStatsTool } from "./text-stats.js";
import { proposeEditTool } from "./propose-edit.js";
import { withTrustSpec } from "./trust-specs.js";
import { createWebSearchTool, type WebSearchOptions } from "./web-search.js";

/** Settings of the built-in tools that have any (from the config file's `tools` section). */
export interface BuiltinToolSettings {
  sandbox?: Partial<CodeRunOptions>;
  fetch?: Partial<HttpFetchOptions>;
  search?: Partial<WebSearchOptions>;
  /** Long-term memory, for memory_save, memory_search and memory_forget (each in the caller's namespace); without it they say there is no store. */
  memory?: { memory: Memory; namespaceOf: NamespaceOf };
  /** Earlier turns' results, for thread_result; without it the tool says there is no store. */
  threadResults?: ThreadResults;
}

/**
 * Long-term memory where there is no store to hold it (`troupe tools list`, a registry made by
 * hand): the memory tools are listed all the same — the tool list does not depend on what exists
 * on disk — and a call says what is missing.
 */
const NO_MEMORY: Memory = {
  save: () => Promise.reject(noStore("long-term memory")),
  get: () => Promise.reject(noStore("long-term memory")),
  search: () => Promise.reject(noStore("long-term memory")),
  list: () => Promise.reject(noStore("long-term memory")),
  forget: () => Promise.reject(noStore("long-term memory")),
};
const NO_THREAD_RESULTS: ThreadResults = { read: () => Promise.reject(noStore("earlier turns' results")) };

function noStore(what: string): ToolError {
  return new ToolError("no_store", `${what} needs troupe's store, which this caller has not opened (run it through troupe run, troupe serve or an engine)`);
}

/**
 * The built-in tools, in the order they are listed; the file tools with their effects (for
 * settling a call a crash cut short). The same tools whatever the settings: without a store,
 * the memory tools and thread_result say so when called. Every tool carries its trust spec
 * (trust-specs.ts).
 */
export function createBuiltinTools(settings: BuiltinToolSettings = {}): ToolDefinition[] {
  const tools: ToolDefinition[] = [
    calculatorTool as ToolDefinition,
    jsonTool as ToolDefinition,
    fileReadTool as ToolDefinition,
    fileWriteTool as ToolDefinition,
    fileAppendTool as ToolDefinition,
    fileListTool as ToolDefinition,
    textStatsTool as ToolDefinition,
    fileDeleteTool as ToolDefinition,
    fileMoveTool as ToolDefinition,
    fileCopyTool as ToolDefinition,
    proposeEditTool as ToolDefinition,
    createCodeRunTool(settings.sandbox) as ToolDefinition,
    createHttpFetchTool(settings.fetch) as ToolDefinition,
    createWebSearchTool(settings.search) as ToolDefinition,
    boardPostTool as ToolDefinition,
    boardReadTool as ToolDefinition,
    ...createMemoryTools(settings.memory?.memory ?? NO_MEMORY, settings.memory?.namespaceOf ?? (() => [])),
    createThreadResultTool(settings.threadResults ?? NO_THREAD_RESULTS),
  ];
  return tools.map((tool) => withTrustSpec(FILE_EFFECTS[tool.name] && !tool.effect ? { ...tool, effect: FILE_EFFECTS[tool.name] } : tool));
}

/** A registry holding every built-in tool. Without a policy in `options` it checks no permissions. */
export function createBuiltinRegistry(options: ToolRegistryOptions & { settings?: BuiltinToolSettings } = {}): ToolRegistry {
  const { settings, ...registryOptions } = options;
  const registry = new ToolRegistry(registryOptions);
  for (const tool of createBuiltinTools(settings)) registry.register(tool);
  return registry;
}
