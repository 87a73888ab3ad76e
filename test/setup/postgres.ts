/**
 * Vitest global setup: a throwaway Postgres cluster for the whole run (the store contract suite and
 * the scale-out tests need one), started in a temporary folder on 127.0.0.1 and a free port, as
 * `nobody` when run as root, and removed afterwards. `.ci/system-packages.sh` (run by `npm test`)
 * installs Debian's `postgresql` when it is missing; without it the run fails here, saying how to
 * install it — nothing is skipped.
 */
import type { TestProject } from "vitest/node";
import { startThrowawayPostgres, type ThrowawayPostgres } from "../../src/testing/postgres-cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The throwaway cluster's maintenance database (create a database per test file from it). */
    postgresUrl: string;
  }
}

let cluster: ThrowawayPostgres | undefined;

export async function setup(project: TestProject): Promise<void> {
  // A cluster given from outside (TROUPE_TEST_POSTGRES_URL) is used as it is.
  const given = process.env.TROUPE_TEST_POSTGRES_URL;
  if (given) {
    project.provide("postgresUrl", given);
    return;
  }
  cluster = await startThrowawayPostgres({ maxConnections: 400 });
  const stop = (): void => {
    void cluster?.destroy();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  project.provide("postgresUrl", cluster.url);
}

export async function teardown(): Promise<void> {
  await cluster?.destroy();
  cluster = undefined;
}
