import { describe, expect, it } from "vitest";
import { type Fetched, type OwnerLoad, takeRound } from "./owner-levels.js";

// takeRound against a queue that fetches as pg-boss's `fetch` does with `groupConcurrency` and
// `ignoreGroups`: the oldest `batchSize` takeable jobs of owners below the level and not ignored,
// then each owner cut to the level. (The same code on a real pg-boss: test/postgres-fair-queue.)

interface Job {
  id: string;
  group: string | null;
  takeable: boolean;
  active: boolean;
}

class FakeQueue {
  readonly jobs: Job[] = [];
  fetches = 0;

  add(group: string | null, count: number, takeable = true): void {
    for (let index = 0; index < count; index += 1) this.jobs.push({ id: `${group ?? "none"}-${this.jobs.length}`, group, takeable, active: false });
  }

  activeOf(group: string | null): number {
    return this.jobs.filter((job) => job.active && job.group === group).length;
  }

  loads(): OwnerLoad[] {
    const groups = new Set(this.jobs.map((job) => job.group));
    return [...groups].map((group) => ({
      group,
      active: this.activeOf(group),
      waiting: this.jobs.filter((job) => !job.active && job.group === group).length,
    }));
  }

  async fetch(batchSize: number, level: number, ignore: string[]): Promise<Array<Fetched<Job>>> {
    this.fetches += 1;
    const next = this.jobs
      .filter((job) => !job.active && job.takeable)
      .filter((job) => job.group === null || (!ignore.includes(job.group) && this.activeOf(job.group) < level))
      .slice(0, batchSize);
    const granted = new Map<string, number>();
    const taken: Job[] = [];
    for (const job of next) {
      if (job.group !== null) {
        const count = (granted.get(job.group) ?? 0) + 1;
        if (this.activeOf(job.group) + count > level) continue;
        granted.set(job.group, count);
      }
      taken.push(job);
    }
    for (const job of taken) job.active = true;
    return taken.map((job) => ({ job, group: job.group }));
  }

  async take(limit: number, perOwner = Number.POSITIVE_INFINITY, heldHere: Record<string, number> = {}): Promise<string[]> {
    const got = await takeRound({ limit, owners: this.loads(), perOwner, heldHere: (group) => heldHere[group] ?? 0, fetch: (size, level, ignore) => this.fetch(size, level, ignore) });
    return got.map(({ job }) => job.id);
  }
}

const ownerOf = (id: string) => id.slice(0, id.lastIndexOf("-"));

describe("takeRound: jobs round-robin by owner across processes", () => {
  it("gives an owner behind a flood its first job in the same take", async () => {
    const queue = new FakeQueue();
    queue.add("alice", 40);
    queue.add("bob", 1);
    const taken = await queue.take(4);
    expect(taken).toHaveLength(4);
    expect(taken.map(ownerOf).sort()).toEqual(["alice", "alice", "alice", "bob"]);
  });

  it("serves the owner with fewer jobs active anywhere first (another process holds alice's)", async () => {
    const queue = new FakeQueue();
    queue.add("alice", 10);
    queue.add("bob", 10);
    // Another process took three of alice's.
    for (const job of queue.jobs.slice(0, 3)) job.active = true;
    const taken = await queue.take(3);
    expect(taken.map(ownerOf)).toEqual(["bob", "bob", "bob"]);
    const next = await queue.take(4);
    expect(next.map(ownerOf).sort()).toEqual(["alice", "alice", "bob", "bob"]);
  });

  it("fills every free slot when one owner is alone, in one fetch", async () => {
    const queue = new FakeQueue();
    queue.add("alice", 40);
    expect(await queue.take(8)).toHaveLength(8);
    expect(queue.fetches).toBe(1);
  });

  it("holds an owner to its cap in this process, counting what it held before, and gives the slots to others", async () => {
    const queue = new FakeQueue();
    queue.add("alice", 40);
    queue.add("bob", 2);
    const taken = await queue.take(10, 3, { alice: 1 });
    expect(taken.filter((id) => ownerOf(id) === "alice")).toHaveLength(2);
    expect(taken.filter((id) => ownerOf(id) === "bob")).toHaveLength(2);
  });

  it("ends when what waits cannot be taken (its threads are busy), one empty fetch per such owner at most", async () => {
    const queue = new FakeQueue();
    queue.add("alice", 5, false);
    queue.add("bob", 5, false);
    queue.add("carol", 1);
    const taken = await queue.take(8);
    expect(taken.map(ownerOf)).toEqual(["carol"]);
    expect(queue.fetches).toBeLessThanOrEqual(4);
  });

  it("takes nothing, with no fetch, when nothing waits", async () => {
    const queue = new FakeQueue();
    expect(await queue.take(8)).toEqual([]);
    expect(queue.fetches).toBe(0);
  });

  it("still takes jobs made before owners had groups", async () => {
    const queue = new FakeQueue();
    queue.add(null, 3);
    queue.add("bob", 1);
    const taken = await queue.take(8);
    expect(taken).toHaveLength(4);
  });

  it("stays round-robin over many takes of one slot: three owners alternate", async () => {
    const queue = new FakeQueue();
    queue.add("alice", 6);
    queue.add("bob", 6);
    queue.add("carol", 6);
    const order: string[] = [];
    for (let index = 0; index < 9; index += 1) order.push(...(await queue.take(1)).map(ownerOf));
    for (const owner of ["alice", "bob", "carol"]) expect(order.filter((name) => name === owner)).toHaveLength(3);
    // No owner is two ahead of another at any point.
    for (let index = 1; index <= order.length; index += 1) {
      const counts = ["alice", "bob", "carol"].map((owner) => order.slice(0, index).filter((name) => name === owner).length);
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
  });
});
