import { userInfo } from "node:os";
import { memoryNamespace } from "../core/memory.js";
import type { Store } from "../store/index.js";
import { parseStashRef } from "../core/stash.js";
import { ToolError } from "../core/errors.js";
import type { ThreadResults } from "../tools/builtin/thread-result.js";

/** The name of the person running this process (the CLI's memory belongs to them). */
export function localUserName(): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // No passwd entry for this uid (a container): fall back to the environment.
  }
  return process.env.USER ?? process.env.LOGNAME ?? process.env.USERNAME ?? "local";
}

/**
 * The long-term memory namespace of a run's or a call's owner: an API principal's own (the
 * server's runs and calls), else the local user's (the CLI and the library).
 */
export function memoryNamespaceFor(principal: string | null | undefined): string[] {
  return principal ? memoryNamespace({ kind: "key", name: principal }) : memoryNamespace({ kind: "user", name: localUserName() });
}

/** Earlier runs' results for `thread_result`: only a run of the same thread can be read. */
export function threadResultsOf(store: Pick<Store, "runs" | "stash">): ThreadResults {
  return {
    async read(threadId, handle) {
      const key = parseStashRef(handle);
      const run = store.runs.get(key.runId);
      if (!run || run.threadId !== threadId) {
        throw new ToolError("not_in_thread", `${handle} is not a result of this conversation (thread ${threadId}); take handles from its Conversation section`, { handle });
      }
      return store.stash.get(handle);
    },
  };
}
