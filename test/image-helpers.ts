/**
 * troupe's image, built and run here with Debian's podman. No image registry is reachable from
 * these machines, so the image is built on a base made locally (.ci/image-base.sh: mmdebstrap +
 * Node from the npm registry, a stand-in for the official Node image). It runs under runc with
 * resource limits it may set here (crun, podman's default, is refused: it raises RLIMIT_NPROC and
 * RLIMIT_NOFILE, which this sandboxed kernel forbids), and without podman's systemd health timers
 * (none here): the health check is run on demand with `podman healthcheck run`.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { ROOT } from "./helpers.js";

/** What the image test needs on the machine (.ci/system-packages.sh installs it). */
export function checkImageTools(): void {
  const missing = ["podman", "runc", "mmdebstrap"].filter((tool) => spawnSync("bash", ["-c", `command -v ${tool}`]).status !== 0);
  if (missing.length > 0) throw new Error(`the image test needs ${missing.join(", ")}: apt-get install ${missing.join(" ")} (npm test runs .ci/system-packages.sh, which does, as root or with sudo)`);
}

/** The limits containers start with: at most what this process may set (its hard limits), never more. */
function ulimits(): string[] {
  const [files, processes] = execFileSync("bash", ["-c", "ulimit -Hn; ulimit -Hu"], { encoding: "utf8" }).trim().split("\n").map((value) => (value === "unlimited" ? Number.POSITIVE_INFINITY : Number(value)));
  const nofile = Math.min(files ?? 1024, 65_536);
  const nproc = Math.min(processes ?? 4096, 32_768);
  return ["--ulimit", `nofile=${nofile}:${nofile}`, "--ulimit", `nproc=${nproc}:${nproc}`];
}

/** `podman run` options every container of the test gets (see the file's comment). */
export function runOptions(): string[] {
  return ["--runtime", "runc", ...ulimits(), "--health-interval", "disable"];
}

/** Runs podman; its output, or an error with what it printed. */
export function podman(args: string[], options: { timeoutMs?: number; allowFailure?: boolean } = {}): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync("podman", args, { encoding: "utf8", timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 });
  // podman's own complaints about the systemd it does not find here (for health check timers) are not the container's output.
  const stderr = result.stderr
    .split("\n")
    .filter((line) => !/^time="[^"]*" level=\w+ msg=".*(systemd|healthcheck)/.test(line))
    .join("\n");
  if (result.status !== 0 && !options.allowFailure) throw new Error(`podman ${args.slice(0, 3).join(" ")} … failed (exit ${result.status}): ${stderr || result.stdout}`);
  return { code: result.status, stdout: result.stdout, stderr };
}

/** The base image: the one .ci/image-base.sh makes (or has made). */
export function baseImage(): string {
  return execFileSync("bash", [path.join(ROOT, ".ci", "image-base.sh")], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 1_800_000 }).trim();
}

/**
 * `podman build` of the repository's Dockerfile on `base`, tagged `tag`; how long it took. The
 * machine's npm cache is lent to the build (an overlay: the build's writes stay in the build), and
 * the extra CA file Node is told to trust here (a TLS-inspecting proxy's) is given to npm in it.
 */
export function buildImage(base: string, tag: string): number {
  const started = performance.now();
  const args = ["build", "--isolation", "chroot", "--format", "docker", "--build-arg", `BASE=${base}`, "--tag", tag, "--file", path.join(ROOT, "Dockerfile")];
  const ca = process.env.NODE_EXTRA_CA_CERTS;
  if (ca && existsSync(ca)) args.push("--volume", `${ca}:/etc/ssl/certs/build-extra-ca.crt:ro`, "--build-arg", "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/build-extra-ca.crt");
  const cache = path.join(homedir(), ".npm");
  if (existsSync(path.join(cache, "_cacache"))) args.push("--volume", `${cache}:/root/.npm:O`);
  podman([...args, ROOT], { timeoutMs: 3_600_000 });
  return performance.now() - started;
}
