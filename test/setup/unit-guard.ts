/**
 * Setup file of the unit tier (see vitest.config.ts): the promise of `npm run test:unit` — no
 * child processes, no Postgres, no build — is checked here rather than trusted. Every way
 * `node:child_process` starts a process throws in a unit test file, naming the tier rule, so a
 * file that needs a process fails at once and is renamed `*.int.test.ts` instead of slowing the
 * fast tier down unnoticed. The Postgres harness (`test/postgres.ts`) reads the cluster's address
 * that only the integration tier's global setup provides, so it fails here too.
 */
import { createRequire, syncBuiltinESMExports } from "node:module";

const childProcess = createRequire(import.meta.url)("node:child_process") as Record<string, unknown>;

for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
  childProcess[name] = (...args: unknown[]): never => {
    const program = typeof args[0] === "string" ? ` (${args[0]})` : "";
    throw new Error(
      `child_process.${name}${program} in a unit test: the unit tier starts no process; name this file *.int.test.ts (integration tier)`,
    );
  };
}
// ESM importers of node:child_process see the replaced functions too.
syncBuiltinESMExports();
