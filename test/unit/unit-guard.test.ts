import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

/**
 * The unit tier's promise is checked, not trusted (test/setup/unit-guard.ts): whatever way a unit
 * test file reaches `node:child_process`, starting a process throws, naming the rule.
 */
describe("the unit tier's guard", () => {
  const rule = /in a unit test: the unit tier starts no process; name this file \*\.int\.test\.ts/;

  it("makes every way of starting a process throw, through require and through import", async () => {
    const required = createRequire(import.meta.url)("node:child_process") as Record<string, (...args: unknown[]) => unknown>;
    // A module name in a variable: what a library deep in the import graph would do.
    const name = "node:child_process";
    const imported = (await import(name)) as Record<string, (...args: unknown[]) => unknown>;
    for (const module of [required, imported]) {
      for (const call of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
        expect(() => module[call]?.("true"), call).toThrow(rule);
      }
    }
    expect(() => required.execFileSync?.("/usr/bin/bwrap", [])).toThrow(/child_process\.execFileSync \(\/usr\/bin\/bwrap\)/);
  });
});
