import { selectPath } from "./json-path.js";
import { isArgRef, type PlannedSubtask } from "./plan.js";
import { formatReferenced } from "./ref-format.js";

export { ArgReferenceError, describeShape, isDefinitePath, pathProblem, selectPath } from "./json-path.js";

/** The subtask's arguments with every reference replaced by the value it selects (as text, when it has a format). */
export function resolveArgs(subtask: PlannedSubtask, resultOf: (id: string) => unknown): Record<string, unknown> {
  const resolved: Record<string, unknown> = {};
  for (const [name, arg] of Object.entries(subtask.args)) {
    if (!isArgRef(arg)) {
      resolved[name] = arg.value;
      continue;
    }
    const selected = selectPath(resultOf(arg.ref), arg.path, arg.ref);
    resolved[name] = arg.format !== undefined ? formatReferenced(selected, arg.format, arg.ref) : selected;
  }
  return resolved;
}

/**
 * The encoding each reference carries when it takes the `content` of a value read as base64 (a
 * file_read of bytes: `{ content, encoding: "base64" }`), so the step that writes it can write
 * the bytes: by argument name, only for those.
 */
export function carriedEncodings(subtask: PlannedSubtask, resultOf: (id: string) => unknown): Record<string, string> {
  const encodings: Record<string, string> = {};
  for (const [name, arg] of Object.entries(subtask.args)) {
    if (!isArgRef(arg)) continue;
    const parent = /^(.*)(?:\.content|\[['"]content['"]\])$/.exec(arg.path.trim())?.[1];
    if (parent === undefined) continue;
    try {
      const holder = selectPath(resultOf(arg.ref), parent === "" ? "$" : parent, arg.ref) as { encoding?: unknown } | null;
      if (typeof holder === "object" && holder !== null && holder.encoding === "base64") encodings[name] = "base64";
    } catch {
      // The parent path selects nothing the reference could carry an encoding from.
    }
  }
  return encodings;
}
