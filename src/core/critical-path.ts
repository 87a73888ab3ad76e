/** A subtask's place in time: what it waits for and, once it has run, when it started and ended (ms epoch). */
export interface TimedSubtask {
  id: string;
  dependsOn: readonly string[];
  startedAt?: number | undefined;
  endedAt?: number | undefined;
}

/** Where a run's subtask time went: its makespan and the chain of subtasks that accounts for it. */
export interface RunTiming {
  /** The first start of a subtask that has ended. */
  startedAt: number;
  /** The last end. */
  endedAt: number;
  /** `endedAt − startedAt`. */
  makespanMs: number;
  /** The critical path, first subtask to last (see {@link findCriticalPath}). */
  criticalPath: string[];
  /** The summed durations of the critical path's subtasks; the rest of the makespan is time they waited. */
  criticalPathMs: number;
}

type Ended = TimedSubtask & { startedAt: number; endedAt: number };

function hasEnded(subtask: TimedSubtask): subtask is Ended {
  return subtask.startedAt !== undefined && subtask.endedAt !== undefined && subtask.endedAt >= subtask.startedAt;
}

/** Of several subtasks, the one that ended last; ties go to the earlier start, then to the plan's order. */
function endedLast(candidates: readonly Ended[]): Ended | undefined {
  let best: Ended | undefined;
  for (const candidate of candidates) {
    if (!best || candidate.endedAt > best.endedAt || (candidate.endedAt === best.endedAt && candidate.startedAt < best.startedAt)) best = candidate;
  }
  return best;
}

/**
 * The critical path by actual times, over the subtasks that have ended (started and ended).
 *
 * It ends at the subtask that ended last, and walks back: from each subtask to the dependency
 * (in its `dependsOn`) that ended last — the input it was waiting for — until a subtask has no
 * dependency that ran. Ties go to the earlier start, then to the order given. The chain's
 * durations plus the gaps between them (waiting for a concurrency slot, a person, a review
 * round) span from its first start to the last end; the makespan is first start → last end over
 * every subtask that ended. Undefined when no subtask has ended.
 *
 * When every subtask started the moment its last input was ready (no gaps), the chain's work
 * equals the makespan and is the longest path through the DAG by actual durations: every path's
 * durations fit inside it. Gaps on the chain are time the run lost to something other than work.
 */
export function findCriticalPath(subtasks: readonly TimedSubtask[]): RunTiming | undefined {
  const ended = subtasks.filter(hasEnded);
  const last = endedLast(ended);
  if (!last) return undefined;
  const byId = new Map(ended.map((subtask) => [subtask.id, subtask]));
  const chain: Ended[] = [last];
  const seen = new Set([last.id]);
  for (let current = last; ; ) {
    const inputs = current.dependsOn.flatMap((id) => {
      const dependency = byId.get(id);
      return dependency && !seen.has(id) ? [dependency] : [];
    });
    const previous = endedLast(inputs);
    if (!previous) break;
    chain.unshift(previous);
    seen.add(previous.id);
    current = previous;
  }
  const startedAt = Math.min(...ended.map((subtask) => subtask.startedAt));
  return {
    startedAt,
    endedAt: last.endedAt,
    makespanMs: last.endedAt - startedAt,
    criticalPath: chain.map((subtask) => subtask.id),
    criticalPathMs: chain.reduce((sum, subtask) => sum + (subtask.endedAt - subtask.startedAt), 0),
  };
}

/**
 * The longest path through a plan's DAG when each subtask takes `durationOf(id)` ms: the least
 * time the plan can take with unlimited concurrency (the ideal critical path). Dependencies on
 * ids that are not in the list are ignored; the plan must have no cycle.
 */
export function longestPath(subtasks: readonly Pick<TimedSubtask, "id" | "dependsOn">[], durationOf: (id: string) => number): { path: string[]; ms: number } {
  const byId = new Map(subtasks.map((subtask) => [subtask.id, subtask]));
  /** For each subtask: the longest chain ending with it, and its dependency on that chain. */
  const best = new Map<string, { ms: number; previous: string | undefined }>();
  const visit = (id: string, trail: Set<string>): number => {
    const known = best.get(id);
    if (known) return known.ms;
    if (trail.has(id)) throw new Error(`the plan has a cycle through ${id}`);
    trail.add(id);
    let previous: string | undefined;
    let before = 0;
    for (const dependency of byId.get(id)?.dependsOn ?? []) {
      if (!byId.has(dependency)) continue;
      const ms = visit(dependency, trail);
      if (previous === undefined || ms > before) {
        previous = dependency;
        before = ms;
      }
    }
    trail.delete(id);
    const ms = before + durationOf(id);
    best.set(id, { ms, previous });
    return ms;
  };
  let end: string | undefined;
  for (const subtask of subtasks) {
    const ms = visit(subtask.id, new Set());
    if (end === undefined || ms > (best.get(end)?.ms ?? 0)) end = subtask.id;
  }
  const path: string[] = [];
  for (let id = end; id !== undefined; id = best.get(id)?.previous) path.unshift(id);
  return { path, ms: end === undefined ? 0 : (best.get(end)?.ms ?? 0) };
}
