import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { describeShape } from "../../core/json-path.js";
import { type Label, LabelledValue } from "../../core/provenance.js";
import { preview } from "../../core/text.js";
import { defineTool, type ToolDefinition } from "../define-tool.js";

/** Reads a result of an earlier run on a thread, with its provenance label; refuses a handle of another thread's run. */
export interface ThreadResults {
  read(threadId: string, handle: string): Promise<{ value: unknown; label: Label }>;
}

export const ThreadResultArgs = z
  .object({
    handle: z
      .string()
      .regex(/^stash:[A-Za-z0-9._:-]{1,200}\/[A-Za-z0-9._-]{1,64}$/, { error: "a handle is stash:<run>/<subtask>, as the conversation lists it" })
      .describe("the handle of an earlier turn's result, from the conversation (stash:run-…/s1)"),
  })
  .strict();

/**
 * `thread_result`: the result of a subtask of an earlier run on this thread, by the handle the
 * conversation gives it, byte for byte — how a follow-up ("save it to a file") takes what an
 * earlier turn produced. Only runs of the caller's own thread can be read.
 */
export function createThreadResultTool(results: ThreadResults): ToolDefinition {
  return defineTool({
    name: "thread_result",
    description: "Take the result of an earlier turn of this conversation, by its handle (stash:run-…/s1): what \"it\", \"the result\" or \"the total\" of a follow-up refers to.",
    schema: ThreadResultArgs,
    permission: "READ",
    powers: ["run.read"],
    idempotent: true,
    timeoutMs: 5_000,
    async execute({ handle }, context) {
      if (!context.threadId) throw new ToolError("no_thread", "thread_result reads earlier turns of a conversation; this call is not part of one");
      const { value, label } = await results.read(context.threadId, handle);
      // The earlier result keeps the label it was stored with.
      return new LabelledValue(value, label);
    },
    summarize: (value) => (value !== null && typeof value === "object" ? `${describeShape(value)}: ${preview(value, 200)}` : preview(value, 200)),
  }) as ToolDefinition;
}
