import { selectPath } from "./json-path.js";
import { isArgRef, type PlannedSubtask } from "./plan.js";

export { ArgReferenceError, describeShape, isDefinitePath, pathProblem, selectPath } from "./json-path.js";

/** The subtask's arguments with every reference replaced by the value it selects. */
export function resolveArgs(subtask: PlannedSubtask, resultOf: (id: string) => unknown): Record<string, unknown> {
  const resolved: Record<string, unknown> = {};
  for (const [name, arg] of Object.entries(subtask.args)) {
    resolved[name] = isArgRef(arg) ? selectPath(resultOf(arg.ref), arg.path, arg.ref) : arg.value;
  }
  return resolved;
}
