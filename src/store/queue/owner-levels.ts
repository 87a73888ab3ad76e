/** One owner's jobs in a shared queue, as a take finds them. */
export interface OwnerLoad {
  /** The owner's group in the queue (null: jobs made before runs had one). */
  group: string | null;
  /** Its jobs taken and not finished, in every process. */
  active: number;
  /** Its jobs waiting to be taken (some may not be takeable yet: their thread is busy). */
  waiting: number;
}

/** A job fetched, with its owner's group. */
export interface Fetched<Job> {
  job: Job;
  group: string | null;
}

export interface RoundOptions<Job> {
  limit: number;
  owners: OwnerLoad[];
  /** The most jobs one owner may hold in this process. */
  perOwner: number;
  /** Jobs of a group this process holds already. */
  heldHere: (group: string) => number;
  /**
   * Fetches up to `batchSize` jobs, oldest first, of owners with fewer than `level` jobs active
   * (each brought up to `level` at most; Infinity: no such bound), none of the groups in `ignore`.
   */
  fetch: (batchSize: number, level: number, ignore: string[]) => Promise<Array<Fetched<Job>>>;
}

interface Standing {
  active: number;
  waiting: number;
  /** Jobs this process holds (before this take and taken by it). */
  here: number;
  /** A fetch that would have served it found nothing takeable. */
  dry: boolean;
}

/**
 * Takes up to `limit` jobs round-robin by owner across every process of a shared queue, as water
 * fills: the level is the number of active jobs the least-served owners are brought up to, raised
 * only as far as the free slots need, and a fetch at a level serves only owners below it. So an
 * owner with fewer jobs going is served before one with more, and one owner's flood of old jobs
 * does not hold back another's first. The level never lets a fetch hand an owner more than its room
 * under `perOwner` in this process; owners with no room are left out of the fetch altogether.
 *
 * Each round either takes a job or learns that an owner has nothing takeable (its threads are
 * busy), so the rounds are bounded by `limit` plus the number of owners.
 */
export async function takeRound<Job>(options: RoundOptions<Job>): Promise<Array<Fetched<Job>>> {
  const standing = new Map<string, Standing>();
  let legacyWaiting = false;
  const standingOf = (group: string): Standing => {
    let found = standing.get(group);
    if (!found) {
      found = { active: 0, waiting: 0, here: options.heldHere(group), dry: false };
      standing.set(group, found);
    }
    return found;
  };
  for (const owner of options.owners) {
    if (owner.group === null) {
      legacyWaiting = owner.waiting > 0;
      continue;
    }
    const entry = standingOf(owner.group);
    entry.active = owner.active;
    entry.waiting = owner.waiting;
  }
  /** What the cap in this process leaves an owner. */
  const capRoom = (entry: Standing) => options.perOwner - entry.here;
  const room = (entry: Standing) => Math.min(entry.waiting, capRoom(entry));
  /** Owners a fetch at `level` must leave out: no room here, or a level that would bring them past it. */
  const ignored = (level: number) =>
    [...standing].filter(([, entry]) => capRoom(entry) <= 0 || entry.active + capRoom(entry) < level).map(([group]) => group);
  const taken: Array<Fetched<Job>> = [];
  let level = 1;
  while (taken.length < options.limit) {
    const candidates = [...standing.values()].filter((entry) => !entry.dry && room(entry) > 0);
    if (candidates.length === 0) break;
    level = waterLevel(candidates, options.limit - taken.length, room, capRoom);
    const got = await options.fetch(options.limit - taken.length, level, ignored(level));
    if (got.length === 0) {
      // Every candidate below the level was open to that fetch and had nothing takeable.
      for (const entry of candidates) if (entry.active < level) entry.dry = true;
      continue;
    }
    record(got, taken, standingOf);
  }
  // Jobs made before owners had groups pass any level: what slots remain go to them, oldest first.
  if (legacyWaiting && taken.length < options.limit) {
    record(await options.fetch(options.limit - taken.length, level, ignored(level)), taken, standingOf);
  }
  return taken;
}

function record<Job>(got: Array<Fetched<Job>>, taken: Array<Fetched<Job>>, standingOf: (group: string) => Standing): void {
  for (const fetched of got) {
    taken.push(fetched);
    if (fetched.group === null) continue;
    const entry = standingOf(fetched.group);
    entry.active += 1;
    entry.waiting = Math.max(0, entry.waiting - 1);
    entry.here += 1;
  }
}

/**
 * The lowest level that, filled, would use `slots` (or the highest any candidate can reach), never
 * past a candidate's room under the cap: the least-served candidate is always below it.
 */
function waterLevel(candidates: Standing[], slots: number, room: (entry: Standing) => number, capRoom: (entry: Standing) => number): number {
  const lowest = Math.min(...candidates.map((entry) => entry.active)) + 1;
  const ceiling = Math.min(...candidates.map((entry) => entry.active + capRoom(entry)));
  const reach = Math.max(...candidates.map((entry) => entry.active + room(entry)));
  let level = lowest;
  while (level < Math.min(ceiling, reach)) {
    let filled = 0;
    for (const entry of candidates) filled += Math.max(0, Math.min(level - entry.active, room(entry)));
    if (filled >= slots) break;
    level += 1;
  }
  return level;
}
