/**
 * A worker process for the queue comparison's takeover trial (bench/queue-compare.ts): it takes
 * jobs from the named queue library, writes `started <jobId>` on stdout for each, and holds them
 * until it is killed. Not a troupe worker: the bare library, as a user would set it up.
 */
import { setTimeout as sleep } from "node:timers/promises";

const [library, url] = process.argv.slice(2);
if (!url || (library !== "pg-boss" && library !== "graphile-worker" && library !== "troupe")) {
  console.error("usage: queue-child.js pg-boss|graphile-worker|troupe <database url>");
  process.exit(2);
}

if (library === "troupe") {
  const { default: pg } = await import("pg");
  const { Notifications } = await import("../src/store/database/postgres-notifications.js");
  const { PgBossRunQueue } = await import("../src/store/queue/postgres.js");
  const { runQueueLoop } = await import("./queue-compare.js");
  const notifications = new Notifications(url);
  const queue = new PgBossRunQueue({ url, pool: new pg.Pool({ connectionString: url, max: 4 }), notifications, leaseSeconds: 15, supervise: true });
  await queue.start();
  runQueueLoop(queue, 1, async (job) => {
    process.stdout.write(`started ${job.id}\n`);
    await sleep(3_600_000);
  });
} else if (library === "pg-boss") {
  const { PgBoss } = await import("pg-boss");
  const boss = new PgBoss({ connectionString: url, monitorIntervalSeconds: 1, superviseIntervalSeconds: 1, useListenNotify: true, registerInstance: false });
  boss.on("error", () => {});
  await boss.start();
  await boss.work("takeover", { localConcurrency: 1, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }, async ([job]) => {
    process.stdout.write(`started ${job?.id}\n`);
    await sleep(3_600_000);
  });
} else {
  const { Logger, run } = await import("graphile-worker");
  await run({
    connectionString: url,
    concurrency: 1,
    noHandleSignals: true,
    pollInterval: 500,
    logger: new Logger(() => () => {}),
    taskList: {
      takeover: async (_payload, helpers) => {
        process.stdout.write(`started ${helpers.job.id}\n`);
        await sleep(3_600_000);
      },
    },
  });
}
process.stdout.write("ready\n");
