import type { BaseChatModelCallOptions, BindToolsInput } from "@langchain/core/language_models/chat_models";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import type { AIMessageChunk } from "@langchain/core/messages";
import type { Runnable } from "@langchain/core/runnables";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import type { ToolSpec } from "../core/tool-spec.js";

export interface ToolCallingCallOptions extends BaseChatModelCallOptions {
  tools?: ToolSpec[];
}

/**
 * Base for troupe's own chat models (offline, scripted): `bindTools` works as in the provider
 * packages, handing the tools to `_generate` through the call options.
 */
export abstract class ToolCallingChatModel extends BaseChatModel<ToolCallingCallOptions> {
  override bindTools(
    tools: BindToolsInput[],
    kwargs?: Partial<ToolCallingCallOptions>,
  ): Runnable<BaseLanguageModelInput, AIMessageChunk, ToolCallingCallOptions> {
    const specs = tools.map((tool) => convertToOpenAITool(tool) as ToolSpec);
    return this.withConfig({ ...kwargs, tools: specs });
  }
}

/** The names of the tools bound for this call. */
export function boundToolNames(options: ToolCallingCallOptions): string[] {
  return (options.tools ?? []).map((tool) => tool.function.name);
}
