import { AsyncResource } from "node:async_hooks";
import { addReason, type Trail } from "./call-trail.js";
import type { InputChannel, ToolContext } from "./define-tool.js";

/**
 * The channel through which one call's tool code puts its server's questions to a person. The
 * graph's `requestInput` is LangGraph's `interrupt()`, which reads the run from the async context:
 * the channel binds it to the call's context here, where the registry starts the call, so an MCP
 * client's request handler (which runs in its transport's context) asks in the right run. A throw
 * from the ask is the graph pausing: it is kept in the trail, the tool is told `paused` and stops
 * its call, and the registry throws it once the call has ended and its row is written.
 */
export function createInputChannel(context: ToolContext, trail: Trail): InputChannel {
  const requestInput = context.requestInput;
  const bound = requestInput ? AsyncResource.bind(requestInput) : undefined;
  return {
    canAsk: bound !== undefined,
    async ask(question) {
      if (!bound) throw new Error("no person can be asked in this call");
      if (trail.pause) return { paused: true };
      try {
        return { answer: await bound(question) };
      } catch (error) {
        trail.pause = { error };
        return { paused: true };
      }
    },
    note(text) {
      addReason(trail, text);
    },
  };
}
