import { chmodSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROOT, tempDir } from "./helpers.js";
import { baseImage, buildImage, checkImageTools, podman, runOptions } from "./image-helpers.js";
import { freshDatabase } from "./postgres.js";
import { PATIENCE_MS } from "./wait.js";

/**
 * The Dockerfile and compose.yaml: the image builds (on a local base: no registry is reachable
 * here), runs as its non-root user with bubblewrap working inside, answers /health, and runs the
 * compose file's topology — one API process and two workers — against Postgres (the suite's
 * throwaway cluster, reached on the host's network), completing a run through the API.
 */
const TAG = "localhost/troupe:test";
const KEY = "image-test-key-1";
const started: string[] = [];
const volumes: string[] = [];
const prefix = `troupe-image-test-${process.pid}`;
let buildMs = 0;

interface ComposeService {
  command: string[];
  security_opt?: string[];
  environment?: Record<string, string>;
}

/** compose.yaml's services (anchors and merges resolved). */
function composeServices(): Record<string, ComposeService> {
  return (parse(readFileSync(path.join(ROOT, "compose.yaml"), "utf8"), { merge: true }) as { services: Record<string, ComposeService> }).services;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A container started in the background on the host's network; its name. */
function start(name: string, args: string[]): string {
  const full = `${prefix}-${name}`;
  podman(["run", "--detach", "--name", full, "--network", "host", ...runOptions(), ...args]);
  started.push(full);
  return full;
}

/** Waits (with a generous ceiling) until `url` answers 200; what it answered. */
async function until200(url: string, container: string, headers: Record<string, string> = {}): Promise<unknown> {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    const answer = await fetch(url, { headers }).then(
      async (response) => (response.ok ? ((await response.json()) as unknown) : undefined),
      () => undefined,
    );
    if (answer !== undefined) return answer;
    const state = podman(["inspect", "--format", "{{.State.Status}}", container], { allowFailure: true }).stdout.trim();
    if (state !== "running" || Date.now() > deadline) throw new Error(`${container} did not answer ${url} (${state}): ${podman(["logs", container], { allowFailure: true }).stderr}`);
    await sleep(200);
  }
}

beforeAll(() => {
  checkImageTools();
  buildMs = buildImage(baseImage(), TAG);
}, 3_600_000);

afterAll(() => {
  for (const container of started.splice(0)) podman(["rm", "--force", "--time", "5", container], { allowFailure: true });
  for (const volume of volumes.splice(0)) podman(["volume", "rm", "--force", volume], { allowFailure: true });
});

describe("the image", () => {
  it("runs as a non-root user, with /data and /workspace as volumes, a health check, and troupe as its command", () => {
    const [image] = JSON.parse(podman(["image", "inspect", TAG]).stdout) as Array<{ Size: number; Healthcheck?: { Test: string[] }; Config: { User: string; Volumes: Record<string, unknown>; Entrypoint: string[]; Cmd: string[] } }>;
    expect(image?.Config.User).toBe("troupe");
    expect(Object.keys(image?.Config.Volumes ?? {}).sort()).toEqual(["/data", "/workspace"]);
    expect(image?.Healthcheck?.Test.join(" ")).toContain("/health");
    expect(image?.Config.Entrypoint).toEqual(["troupe"]);
    expect(image?.Config.Cmd).toEqual(["serve", "--host", "0.0.0.0", "--port", "8003"]);
    expect(podman(["run", "--rm", ...runOptions(), "--entrypoint", "id", TAG]).stdout.trim()).toBe("uid=10001(troupe) gid=10001(troupe) groups=10001(troupe)");
    console.info(`image ${TAG}: ${(image?.Size ?? 0) / 1e6} MB, built in ${Math.round(buildMs / 1000)} s`);
  });

  it("refuses to serve on every address without API keys, in one line", () => {
    const refused = podman(["run", "--rm", ...runOptions(), TAG], { allowFailure: true });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^troupe: .*TROUPE_API_KEYS/)]);
  });

  it("runs a task with no volume given (its anonymous volumes) as its user", () => {
    const result = podman(["run", "--rm", ...runOptions(), TAG, "run", "compute 17% of 2,340 and save it to result.txt"], { timeoutMs: 180_000 });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("397.8");
  });

  it("refuses a data volume its user cannot write (a host folder owned by root), in one line", () => {
    const folder = tempDir("troupe-image-root-");
    chmodSync(folder, 0o755);
    const refused = podman(["run", "--rm", ...runOptions(), "--volume", `${folder}:/data`, TAG, "run", "compute 2+3"], { allowFailure: true, timeoutMs: 180_000 });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split("\n")).toEqual(["troupe: the data directory /data is not writable"]);
  });

  it("runs compose.yaml's API and two workers on Postgres: healthy, a run completed through the API, scripts sandboxed by bubblewrap inside", { timeout: 900_000 }, async () => {
    const services = composeServices();
    const database = await freshDatabase("image");
    const workspace = `${prefix}-workspace`;
    podman(["volume", "create", workspace]);
    volumes.push(workspace);
    const apiPort = await freePort();
    const withPort = (command: string[], port: number): string[] => command.map((part, index) => (command[index - 1] === "--port" ? String(port) : part));
    const securityOf = (service: ComposeService | undefined): string[] => (service?.security_opt ?? []).flatMap((option) => ["--security-opt", option]);
    const common = ["--env", `TROUPE_DATABASE_URL=${database}`, "--volume", `${workspace}:/workspace`];

    // Cold start: from the API container's start to its first run completed.
    const coldStart = performance.now();
    const api = start("api", [...common, ...securityOf(services.api), "--env", `TROUPE_API_KEYS=tester:${KEY}`, "--env", `TROUPE_HEALTH_PORT=${apiPort}`, TAG, ...withPort(services.api?.command ?? [], apiPort)]);
    const base = `http://127.0.0.1:${apiPort}`;
    await until200(`${base}/health`, api);
    const workerPorts: number[] = [];
    for (const name of ["worker-1", "worker-2"]) {
      const port = await freePort();
      workerPorts.push(port);
      start(name, [...common, ...securityOf(services[name]), "--env", `TROUPE_HEALTH_PORT=${port}`, TAG, ...withPort(services[name]?.command ?? [], port)]);
    }
    const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
    const accepted = await fetch(`${base}/api/v1/execute`, { method: "POST", headers: auth, body: JSON.stringify({ task: "compute 17% of 2,340 and save it to result.txt" }) });
    expect(accepted.status).toBe(202);
    const taskId = ((await accepted.json()) as { data: { task_id: string } }).data.task_id;
    let status = "";
    while (!["completed", "failed", "cancelled"].includes(status)) {
      status = ((await (await fetch(`${base}/api/v1/tasks/${taskId}`, { headers: auth })).json()) as { data: { status: string } }).data.status;
      if (status !== "completed") await sleep(100);
    }
    const coldStartMs = performance.now() - coldStart;
    expect(status).toBe("completed");
    console.info(`cold start to the first completed run: ${Math.round(coldStartMs)} ms (API and two workers on Postgres)`);

    // The API ran none of it: a worker did. Both workers register, alive (the run may finish, in one model call, before the second has).
    type Health = { backend: string; tasks: { workers: number }; workers?: Array<{ alive: boolean }> };
    let health = (await until200(`${base}/health`, api)) as Health;
    for (const deadline = Date.now() + PATIENCE_MS; (health.workers ?? []).filter((worker) => worker.alive).length < 2 && Date.now() < deadline; ) {
      await sleep(200);
      health = (await until200(`${base}/health`, api)) as Health;
    }
    expect(health.backend).toBe("postgres");
    expect(health.tasks.workers).toBe(0);
    expect(health.workers?.filter((worker) => worker.alive)).toHaveLength(2);
    // The image's own health check, in each container (the workers' on the port their environment names).
    for (const container of started.filter((name) => name.includes("-api") || name.includes("-worker"))) {
      expect([container, podman(["healthcheck", "run", container], { allowFailure: true }).code]).toEqual([container, 0]);
    }
    // The file the run wrote is in the workspace volume the containers share.
    const mountpoint = podman(["volume", "inspect", "--format", "{{.Mountpoint}}", workspace]).stdout.trim();
    expect(readFileSync(path.join(mountpoint, "result.txt"), "utf8")).toBe("397.8");
    // A script runs in the sandbox, as the container's non-root user.
    const called = await fetch(`${base}/api/v1/tools/call`, { method: "POST", headers: auth, body: JSON.stringify({ tool_name: "code_run", parameters: { language: "python", code: "import os; print(6 * 7, os.getuid())" } }) });
    const outcome = (await called.json()) as { data: { success: boolean; result: { stdout: string } } };
    expect(outcome.data.success).toBe(true);
    expect(outcome.data.result.stdout).toBe("42 10001\n");
    // A graceful stop (SIGTERM, as compose sends it) ends each process with 0.
    for (const container of [...started].filter((name) => name.includes("-api") || name.includes("-worker"))) {
      podman(["stop", "--time", "40", container], { timeoutMs: 60_000 });
      expect([container, podman(["inspect", "--format", "{{.State.ExitCode}}", container]).stdout.trim()]).toEqual([container, "0"]);
    }
  });
});
