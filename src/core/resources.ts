import { isArgRef, type PlannedSubtask } from "./plan.js";

/** The workspace paths a subtask (or one tool call) reads and writes, workspace-relative. */
export interface ResourceUse {
  reads: string[];
  writes: string[];
}

/**
 * The paths a call of a tool with these (literal) arguments reads and writes, as the tool
 * declares them; undefined for a tool that touches no workspace path it can name beforehand.
 */
export type ToolResources = (tool: string, args: Record<string, unknown>) => ResourceUse | undefined;

/** Argument names that, holding a literal path, tell which file a worker is about. */
const PATH_ARGUMENTS = /^(?:path|paths|file|files|filename|from|to|source|destination|target|folder|directory|dir|input|output)$/i;

/**
 * A workspace path in one canonical form (`a/b.txt`; `""` for the workspace itself), or
 * undefined for something that is not a workspace-relative path (absolute, `..`, a URL).
 */
export function canonicalPath(raw: string): string | undefined {
  const trimmed = raw.trim();
  if (trimmed === "" || trimmed.includes("\0") || /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) return undefined;
  if (trimmed.startsWith("/") || trimmed.startsWith("~") || /^[A-Za-z]:[\\/]/.test(trimmed)) return undefined;
  const segments = trimmed.split(/[\\/]+/).filter((segment) => segment !== "" && segment !== ".");
  if (segments.includes("..")) return undefined;
  return segments.join("/");
}

/** Whether two canonical paths touch the same place: equal, or one is a folder holding the other. */
export function pathsOverlap(a: string, b: string): boolean {
  if (a === b || a === "" || b === "") return true;
  return a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

function canonicalAll(paths: readonly string[]): string[] {
  return [...new Set(paths.flatMap((path) => canonicalPath(path) ?? []))];
}

/** The literal values of a subtask's arguments (references are unknown until it runs). */
function literalArgs(subtask: PlannedSubtask): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, arg] of Object.entries(subtask.args)) if (!isArgRef(arg)) values[name] = arg.value;
  return values;
}

/**
 * What a subtask reads and writes: what the planner declared (`reads`, `writes`), what a direct
 * tool step's tool declares for its literal arguments, and — for a worker that declares
 * nothing — every literal path argument, counted as both read and written, since its direction
 * is unknown.
 */
export function resourcesOf(subtask: PlannedSubtask, toolResources: ToolResources): ResourceUse {
  const reads = [...(subtask.reads ?? [])];
  const writes = [...(subtask.writes ?? [])];
  const literals = literalArgs(subtask);
  if (subtask.tool !== undefined && subtask.mapOver === undefined) {
    const used = toolResources(subtask.tool, literals);
    if (used) {
      reads.push(...used.reads);
      writes.push(...used.writes);
    }
  } else if (subtask.tool === undefined && subtask.reads === undefined && subtask.writes === undefined) {
    for (const [name, value] of Object.entries(literals)) {
      if (!PATH_ARGUMENTS.test(name)) continue;
      const paths = (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === "string");
      reads.push(...paths);
      writes.push(...paths);
    }
  }
  return { reads: canonicalAll(reads), writes: canonicalAll(writes) };
}

/** A dependency the resource check added, and why. */
export interface AddedDependency {
  subtask: string;
  after: string;
  path: string;
  kind: "read-after-write" | "write-after-write" | "write-after-read";
}

export interface ResourceOrder {
  /** The plan with the dependencies added. */
  subtasks: PlannedSubtask[];
  added: AddedDependency[];
  /** Conflicts the check will not decide: a subtask listed first reads what a later one writes. */
  errors: string[];
}

function firstOverlap(a: readonly string[], b: readonly string[]): string | undefined {
  for (const left of a) for (const right of b) if (pathsOverlap(left, right)) return left.length >= right.length ? left : right;
  return undefined;
}

/**
 * Orders subtasks that use the same workspace path and that the plan left unordered. When the
 * one listed first writes the path and the later one reads or writes it, the later one is made
 * to wait (read-after-write, write-after-write), following the plan's own order. When the one
 * listed first only reads what a later one writes, the intent is not clear (read the old
 * content, or wait for the new one?), so it is an error for the planner to settle. Adding
 * dependencies only between subtasks that were unordered never makes a cycle. Assumes a valid
 * plan (known ids, no cycle).
 */
export function orderByResources(plan: readonly PlannedSubtask[], toolResources: ToolResources, options: { followListOrder?: boolean } = {}): ResourceOrder {
  const subtasks = plan.map((subtask) => ({ ...subtask, dependsOn: [...subtask.dependsOn] }));
  const uses = subtasks.map((subtask) => resourcesOf(subtask, toolResources));
  const index = new Map(subtasks.map((subtask, position) => [subtask.id, position]));
  // ancestors[i]: the positions that must finish before subtask i starts.
  const ancestors: Array<Set<number>> = subtasks.map(() => new Set<number>());
  const visit = (position: number, seen: Set<number>): Set<number> => {
    const own = ancestors[position] as Set<number>;
    if (seen.has(position)) return own;
    seen.add(position);
    for (const dependency of subtasks[position]?.dependsOn ?? []) {
      const at = index.get(dependency);
      if (at === undefined) continue;
      own.add(at);
      for (const inherited of visit(at, seen)) own.add(inherited);
    }
    return own;
  };
  const seen = new Set<number>();
  subtasks.forEach((_, position) => visit(position, seen));
  const added: AddedDependency[] = [];
  const errors: string[] = [];
  for (let later = 0; later < subtasks.length; later += 1) {
    // Nearest first: once s3 waits for s2, which waits for s1, s3 needs no edge of its own to s1.
    for (let earlier = later - 1; earlier >= 0; earlier -= 1) {
      const first = uses[earlier] as ResourceUse;
      const second = uses[later] as ResourceUse;
      if ((ancestors[later] as Set<number>).has(earlier) || (ancestors[earlier] as Set<number>).has(later)) continue;
      const before = subtasks[earlier] as PlannedSubtask;
      const after = subtasks[later] as PlannedSubtask;
      // With `followListOrder` (a planner whose list order is the order meant), a later writer waits for an earlier reader too.
      const written = firstOverlap(first.writes, [...second.reads, ...second.writes]) ?? (options.followListOrder ? firstOverlap(first.reads, second.writes) : undefined);
      if (written !== undefined) {
        after.dependsOn.push(before.id);
        const kind =
          firstOverlap(first.writes, second.writes) !== undefined ? "write-after-write" : firstOverlap(first.writes, second.reads) !== undefined ? "read-after-write" : "write-after-read";
        added.push({ subtask: after.id, after: before.id, path: written || ".", kind });
        // Everything that waits for `later` now waits for `earlier` and its ancestors too.
        const gained = new Set([earlier, ...(ancestors[earlier] as Set<number>)]);
        ancestors.forEach((set, position) => {
          if (position === later || set.has(later)) for (const item of gained) set.add(item);
        });
        continue;
      }
      const read = firstOverlap(first.reads, second.writes);
      if (read !== undefined) {
        errors.push(
          `subtask ${before.id} reads ${read || "the workspace"} and subtask ${after.id} writes it, and neither depends on the other: ` +
            `add "${after.id}" to ${before.id}.dependsOn if ${before.id} needs what ${after.id} writes, or "${before.id}" to ${after.id}.dependsOn if ${before.id} must read it first`,
        );
      }
    }
  }
  return { subtasks, added, errors };
}

/** A sentence for each added dependency, for the trace. */
export function describeAdded(added: readonly AddedDependency[]): string[] {
  const why = { "write-after-write": "both write", "read-after-write": "it reads what the other writes,", "write-after-read": "it writes what the other reads," } as const;
  return added.map((entry) => `${entry.subtask} now runs after ${entry.after}: ${why[entry.kind]} ${entry.path}`);
}
