import { type ChildProcess, spawn } from "node:child_process";
import { cleanEnv, CLI } from "./helpers.js";
import { waitFor } from "./wait.js";

/** A troupe process started by a test: `serve` or `worker`, with where it answers. */
export interface Proc {
  child: ChildProcess;
  pid: number;
  /** serve: its API; worker: its /health and /metrics. */
  url: string;
  /** worker: its id. */
  worker?: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
  /** What it logged on stdout (serve's JSON log lines). */
  stdout: () => string;
  stop(): Promise<void>;
}

const started: Proc[] = [];

/** Stops every process a test started (SIGKILL after 10 s), for afterEach. */
export async function stopAll(): Promise<void> {
  await Promise.all(started.splice(0).map((proc) => proc.stop()));
}

async function start(args: string[], cwd: string, env: Record<string, string>, ready: RegExp): Promise<Proc> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...cleanEnv(), TROUPE_RATE_LIMIT: "0", TROUPE_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  // A cold start on a busy machine can take a while: wait for the line that says it is ready (or its exit).
  const match = await waitFor(() => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`troupe ${args[0]} did not start: ${stderr}`);
    return ready.exec(stderr) ?? undefined;
  }, () => `troupe ${args[0]} to start (its stderr so far: ${stderr.slice(-2_000)})`, 25).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  const proc: Proc = {
    child,
    pid: child.pid as number,
    url: match.groups?.url ?? "",
    ...(match.groups?.worker ? { worker: match.groups.worker } : {}),
    exited,
    stderr: () => stderr,
    stdout: () => stdout,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  started.push(proc);
  return proc;
}

/** `troupe serve --port 0` (with `--workers 0` for an API process that runs nothing). */
export function serveApi(cwd: string, env: Record<string, string>, args: string[] = ["--workers", "0"]): Promise<Proc> {
  return start(["serve", "--port", "0", ...args], cwd, env, /listening on (?<url>http:\/\/\S+) /);
}

/** `troupe worker --port 0 --concurrency N`. */
export function startWorker(cwd: string, env: Record<string, string>, concurrency = 5): Promise<Proc> {
  return start(["worker", "--port", "0", "--concurrency", String(concurrency)], cwd, env, /troupe worker: (?<worker>\S+) taking runs .*\/health and \/metrics at (?<url>http:\/\/[^\s,]+)/);
}

export async function call<T = Record<string, unknown>>(url: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: { code: string; message: string; data: T } }> {
  const response = await fetch(url, {
    method: init.method ?? "GET",
    headers: init.body === undefined ? {} : { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: (await response.json()) as { code: string; message: string; data: T } };
}

export async function submit(api: string, body: Record<string, unknown>): Promise<string> {
  const response = await call<{ task_id: string }>(`${api}/api/v1/execute`, { method: "POST", body });
  if (response.status !== 202) throw new Error(`submit failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.data.task_id;
}

export const until = <T>(check: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> => waitFor(check, what, 100);

export async function taskStatus(api: string, id: string): Promise<string> {
  return (await call<{ status: string }>(`${api}/api/v1/tasks/${id}`)).body.data.status;
}
