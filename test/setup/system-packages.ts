/**
 * Global setup of the integration tier: the Debian packages its tests drive (bubblewrap, Chromium,
 * tmux, Postgres…), installed when missing by `.ci/system-packages.sh`, which says what is missing
 * and how to install it when it cannot. The unit tier needs none of them.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  execFileSync("bash", [path.join(root, ".ci/system-packages.sh")], { stdio: "inherit" });
}
