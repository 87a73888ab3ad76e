import { execFile, spawn } from "node:child_process";
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ToolError } from "../../core/errors.js";
import { seccompProgram } from "./seccomp.js";

/**
 * Python and Node scripts in a child process under bubblewrap: new PID, network, IPC and UTS
 * namespaces (no network at all), a read-only view of the system, a private /tmp, only the
 * run's workspace writable, an empty environment, rlimits set with prlimit (CPU seconds,
 * address space, processes, file size, open files, no core dumps), a seccomp filter (seccomp.ts:
 * no new namespaces, mounts, keyrings, ptrace, bpf, …), `--disable-userns` where bwrap has it
 * and a user namespace is made, and a wall-clock kill of the whole namespace. Where bubblewrap is missing or cannot create namespaces, scripts are refused
 * with how to fix it — never run unsandboxed.
 */

export interface ProcessLimits {
  timeoutMs: number;
  memoryMb: number;
  maxProcesses: number;
  maxFileBytes: number;
  maxOutputBytes: number;
}

export interface SubprocessOptions {
  /** The bubblewrap binary (default: `bwrap` on PATH). */
  bwrapPath?: string;
  pythonPath?: string;
  nodePath?: string;
}

export type ScriptLanguage = "python" | "node";

export interface ScriptResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

/** The uid scripts run as when troupe runs as root (nobody), so the process limit applies to them. */
const SANDBOX_UID = 65534;
export const INSTALL_HINT =
  "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap) and make sure user namespaces are enabled";

function findOnPath(name: string): string | undefined {
  if (name.includes("/")) return existsSync(name) ? name : undefined;
  for (const directory of (process.env.PATH ?? "/usr/bin:/bin").split(path.delimiter)) {
    const candidate = path.join(directory, name);
    if (directory && existsSync(candidate)) return candidate;
  }
  return undefined;
}

function run(file: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, env: {} }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === "number" ? ((error as { code: number }).code) : null) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Runs bwrap with the seccomp program on descriptor 3 (`--seccomp 3`), as the real runs do. */
function runWithSeccomp(file: string, args: string[], program: Buffer, timeoutMs: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, ["--seccomp", "3", ...args], { env: {}, stdio: ["ignore", "ignore", "pipe", "pipe"] });
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const pipe = child.stdio[3] as NodeJS.WritableStream | null;
    pipe?.on("error", () => undefined);
    pipe?.end(program);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ code: null, stderr: error.message });
    });
  });
}

/** Mounts of the system, read-only; merged-/usr symlinks (/bin → usr/bin) are recreated as links. */
function systemMounts(): string[] {
  const args = ["--ro-bind", "/usr", "/usr"];
  for (const top of ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"]) {
    if (!existsSync(top)) continue;
    const info = lstatSync(top);
    if (info.isSymbolicLink()) args.push("--symlink", readlinkSync(top), top);
    else if (info.isDirectory()) args.push("--ro-bind", top, top);
  }
  // Enough of /etc for the C library and locales; no passwords, hosts or credentials.
  for (const file of ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/alternatives"]) {
    if (existsSync(file)) args.push("--ro-bind", file, file);
  }
  return args;
}

/** A binary outside /usr is mounted read-only with its installation (its prefix: …/bin/x → …). */
function interpreterMounts(binary: string): string[] {
  if (binary.startsWith("/usr/")) return [];
  const prefix = path.dirname(path.dirname(binary));
  return prefix === "/" ? ["--ro-bind", binary, binary] : ["--ro-bind", prefix, prefix];
}

/** A stream's bytes up to a cap; what comes after is counted as cut, not kept. */
export class CappedOutput {
  readonly #chunks: Buffer[] = [];
  readonly #cap: number;
  #bytes = 0;
  truncated = false;

  constructor(cap: number) {
    this.#cap = cap;
  }

  add(chunk: Buffer): void {
    const room = this.#cap - this.#bytes;
    if (chunk.byteLength > room) this.truncated = true;
    if (room <= 0) return;
    const kept = chunk.byteLength > room ? chunk.subarray(0, room) : chunk;
    // A copy when cut, so the rest of the pipe's buffer is not kept alive by a slice of it.
    this.#chunks.push(kept === chunk ? chunk : Buffer.from(kept));
    this.#bytes += kept.byteLength;
  }

  /** The bytes kept, as UTF-8 (a character cut at the cap becomes U+FFFD). */
  text(): string {
    return Buffer.concat(this.#chunks, this.#bytes).toString("utf8");
  }
}

/** Runs scripts under bubblewrap; checks once that bubblewrap works here. */
export class Bubblewrap {
  readonly #options: SubprocessOptions;
  #probe: Promise<string | undefined> | undefined;
  /** Whether this bwrap has `--disable-userns` (0.8 and later). */
  #disableUserns = false;
  /** The seccomp program, when this architecture has one and the kernel takes it. */
  #seccomp: Buffer | undefined;

  constructor(options: SubprocessOptions = {}) {
    this.#options = options;
  }

  /** Why scripts cannot run here, or undefined when they can. */
  unavailable(): Promise<string | undefined> {
    this.#probe ??= this.#check();
    return this.#probe;
  }

  async #check(): Promise<string | undefined> {
    const binary = findOnPath(this.#options.bwrapPath ?? "bwrap");
    if (!binary) return `bubblewrap (${this.#options.bwrapPath ?? "bwrap"}) is not installed, so troupe refuses to run scripts in a subprocess; ${INSTALL_HINT}`;
    if (!existsSync("/usr/bin/prlimit")) {
      return "prlimit (util-linux) is missing at /usr/bin/prlimit; troupe needs it to limit scripts' CPU, memory, processes and files (Debian/Ubuntu: apt-get install util-linux)";
    }
    if (process.getuid?.() === 0 && !findOnPath("/usr/bin/setpriv") && !findOnPath("setpriv")) {
      return "setpriv (util-linux) is missing; troupe needs it to drop to an unprivileged user inside the sandbox when it runs as root (Debian/Ubuntu: apt-get install util-linux)";
    }
    const help = await run(binary, ["--help"], 10_000);
    this.#disableUserns = help.stdout.includes("--disable-userns") || help.stderr.includes("--disable-userns");
    const probeArgs = (): string[] => [...this.#namespaceArgs(), ...systemMounts(), "--proc", "/proc", "--dev", "/dev", "/usr/bin/true"];
    let probe = await run(binary, probeArgs(), 10_000);
    if (probe.code !== 0 && this.#disableUserns) {
      // A kernel that refuses the nested namespace --disable-userns makes: sandbox without it.
      this.#disableUserns = false;
      probe = await run(binary, probeArgs(), 10_000);
    }
    if (probe.code !== 0) return `bubblewrap cannot create a sandbox here (${probe.stderr.trim() || `exit ${probe.code}`}); ${INSTALL_HINT}`;
    const program = seccompProgram();
    if (program && (await runWithSeccomp(binary, probeArgs(), program, 10_000)).code === 0) this.#seccomp = program;
    return undefined;
  }

  /** What the sandbox adds besides namespaces and rlimits here (for tests and `tools list`). */
  async hardening(): Promise<{ seccomp: boolean; disableUserns: boolean }> {
    await this.unavailable();
    return { seccomp: this.#seccomp !== undefined, disableUserns: this.#disableUserns };
  }

  #namespaceArgs(): string[] {
    const base = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session"];
    // As root, no user namespace: the script drops to `nobody` with setpriv (keeping only the
    // right to write the workspace's root-owned files), so RLIMIT_NPROC applies to it.
    if (process.getuid?.() === 0) return [...base, "--cap-add", "CAP_DAC_OVERRIDE"];
    // No user namespace of its own for the script (the seccomp filter refuses them as root too).
    return [...base, "--unshare-user", ...(this.#disableUserns ? ["--disable-userns"] : [])];
  }

  #interpreter(language: ScriptLanguage): string {
    const configured = language === "python" ? this.#options.pythonPath : this.#options.nodePath;
    const found = configured ? findOnPath(configured) : language === "python" ? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : findOnPath("python3")) : process.execPath;
    if (!found) throw new ToolError("sandbox_unavailable", `no ${language} interpreter found${configured ? ` at ${configured}` : ""}`);
    return realpathSync(found);
  }

  /** Runs a script (its source) with the workspace mounted at /workspace (writable unless `readOnly`); input goes to stdin as JSON. */
  async runScript(language: ScriptLanguage, source: string, workspace: string, input: unknown, limits: ProcessLimits, signal?: AbortSignal, mount: { readOnly?: boolean } = {}): Promise<ScriptResult> {
    const problem = await this.unavailable();
    if (problem) throw new ToolError("sandbox_unavailable", problem);
    const bwrap = findOnPath(this.#options.bwrapPath ?? "bwrap") as string;
    const interpreter = this.#interpreter(language);
    const codeDirectory = await mkdtemp(path.join(tmpdir(), "troupe-code-"));
    const script = language === "python" ? "main.py" : "main.mjs";
    try {
      await writeFile(path.join(codeDirectory, script), source, { mode: 0o644 });
      await chmod(codeDirectory, 0o755);
      const cpuSeconds = Math.max(1, Math.ceil(limits.timeoutMs / 1000) + 1);
      // V8 reserves address space far beyond its heap: the heap gets the memory limit, the address space more room.
      const addressSpace = (language === "node" ? limits.memoryMb + 4096 : limits.memoryMb) * 1024 * 1024;
      const interpreterArgs =
        language === "python" ? ["-I", "-B", `/sandbox/${script}`] : [`--max-old-space-size=${limits.memoryMb}`, "--disallow-code-generation-from-strings", `/sandbox/${script}`];
      const limited = [
        "/usr/bin/prlimit",
        `--cpu=${cpuSeconds}`,
        `--as=${addressSpace}`,
        `--nproc=${limits.maxProcesses}`,
        `--fsize=${limits.maxFileBytes}`,
        "--nofile=256",
        "--core=0",
        "--",
        interpreter,
        ...interpreterArgs,
      ];
      const dropPrivileges =
        process.getuid?.() === 0
          ? [
              findOnPath("/usr/bin/setpriv") ?? "setpriv",
              `--reuid=${SANDBOX_UID}`,
              `--regid=${SANDBOX_UID}`,
              "--clear-groups",
              "--inh-caps=-all,+dac_override",
              "--ambient-caps=+dac_override",
              "--bounding-set=-all,+dac_override",
              "--no-new-privs",
            ]
          : [];
      const args = [
        ...this.#namespaceArgs(),
        ...systemMounts(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        // Before the interpreter's mount: an interpreter installed under /tmp must not be hidden by it.
        "--tmpfs",
        "/tmp",
        ...interpreterMounts(interpreter),
        mount.readOnly ? "--ro-bind" : "--bind",
        workspace,
        "/workspace",
        "--ro-bind",
        codeDirectory,
        "/sandbox",
        "--chdir",
        "/workspace",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/local/bin:/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        ...dropPrivileges,
        ...limited,
      ];
      return await this.#spawn(bwrap, this.#seccomp ? ["--seccomp", "3", ...args] : args, input, limits, signal);
    } finally {
      await rm(codeDirectory, { recursive: true, force: true });
    }
  }

  #spawn(bwrap: string, args: string[], input: unknown, limits: ProcessLimits, signal?: AbortSignal): Promise<ScriptResult> {
    const started = performance.now();
    return new Promise((resolve) => {
      const child = spawn(bwrap, args, { env: {}, stdio: ["pipe", "pipe", "pipe", this.#seccomp ? "pipe" : "ignore"] });
      if (this.#seccomp) {
        const pipe = child.stdio[3] as NodeJS.WritableStream | null;
        pipe?.on("error", () => undefined);
        pipe?.end(this.#seccomp);
      }
      // Output is kept up to the cap in bytes as it streams in, and drained (not kept) past it:
      // a script printing gigabytes costs a pipe's worth of memory, and still runs to its end.
      const stdout = new CappedOutput(limits.maxOutputBytes);
      const stderr = new CappedOutput(limits.maxOutputBytes);
      let timedOut = false;
      child.stdout?.on("data", (chunk: Buffer) => stdout.add(chunk));
      child.stderr?.on("data", (chunk: Buffer) => stderr.add(chunk));
      // Killing bubblewrap kills the namespace's init, and with it every process the script made.
      const kill = (): void => {
        child.kill("SIGKILL");
      };
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, limits.timeoutMs);
      const onAbort = (): void => kill();
      signal?.addEventListener("abort", onAbort, { once: true });
      child.stdin?.on("error", () => undefined);
      child.stdin?.end(JSON.stringify(input ?? null));
      child.on("close", (exitCode, exitSignal) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve({ exitCode, signal: exitSignal, stdout: stdout.text(), stderr: stderr.text(), timedOut, truncated: stdout.truncated || stderr.truncated, durationMs: Math.round(performance.now() - started) });
      });
      child.on("error", (error) => {
        clearTimeout(timer);
        resolve({ exitCode: null, signal: null, stdout: stdout.text(), stderr: `${stderr.text()}${error.message}`, timedOut, truncated: stdout.truncated || stderr.truncated, durationMs: Math.round(performance.now() - started) });
      });
    });
  }
}
