// CPU a run of two or more built troupe checkouts, loaded in ONE process and run interleaved, so
// the machine's load falls on every build alike: the benchmark's overhead plan (8 subtasks, 11
// calls to the scripted model at zero latency), process CPU per run from process.cpuUsage().
//
//   TMPDIR=/dev/shm node scripts/pair-cpu.mjs <runs> <checkout> <checkout> [...]
//
// Each <checkout> must be built (dist/bench/scripts.js). With TMPDIR on a RAM disk the figure is
// CPU, not fsync. A profile of the same pair (node --cpu-prof) tells the builds' frames apart by path.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";

const runs = Number(process.argv[2]);
const checkouts = process.argv.slice(3).map((checkout) => path.resolve(checkout));
if (!Number.isInteger(runs) || runs < 1 || checkouts.length === 0) {
  console.error("usage: node scripts/pair-cpu.mjs <runs> <built checkout> [<built checkout> ...]");
  process.exit(2);
}
const WARM_UP = 40;
const TASK = "Combine the figures of the layered plan";
const builds = [];
for (const checkout of checkouts) {
  const scripts = await import(path.join(checkout, "dist/bench/scripts.js"));
  const directory = mkdtempSync(path.join(os.tmpdir(), "troupe-pair-"));
  const { troupe, model } = await scripts.createScriptedTroupe(directory, scripts.scriptFor(scripts.LAYERED_PLAN, { runs: runs + WARM_UP }));
  const run = async () => scripts.expectCompleted(await troupe.run({ task: TASK, concurrency: 8 }), model, checkout);
  builds.push({ checkout, directory, troupe, run, cpu: [], wall: [] });
}
try {
  for (let index = 0; index < WARM_UP; index += 1) for (const build of builds) await build.run();
  for (let index = 0; index < runs; index += 1) {
    for (const build of builds) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      await build.run();
      build.wall.push(performance.now() - started);
      const used = process.cpuUsage(cpu);
      build.cpu.push((used.user + used.system) / 1000);
    }
  }
} finally {
  for (const build of builds) {
    build.troupe.close();
    rmSync(build.directory, { recursive: true, force: true });
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
for (const build of builds) console.log(`${build.checkout}: CPU a run ${median(build.cpu).toFixed(2)} ms (median), wall ${median(build.wall).toFixed(2)} ms`);
