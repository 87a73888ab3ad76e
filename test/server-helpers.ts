import path from "node:path";
import { Writable } from "node:stream";
import type { LightMyRequestResponse } from "fastify";
import { afterEach } from "vitest";
import { Troupe, type TroupeOptions } from "../src/runtime/engine.js";
import { createApp, createLogger, type TroupeApp } from "../src/server/app.js";
import type { ServerConfigInput } from "../src/server/config.js";
import type { Telemetry } from "../src/server/telemetry.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { tempDir } from "./helpers.js";
import { waitFor } from "./wait.js";

/** The shared wait (test/wait.ts), for the tests that take their helpers from here. */
export { waitFor };

export interface TestApp extends TroupeApp {
  troupe: Troupe;
  model?: ScriptedChatModel;
  logs: Array<Record<string, unknown>>;
  directory: string;
}

const open: TestApp[] = [];

afterEach(async () => {
  for (const built of open.splice(0)) {
    await built.evals.shutdown();
    await built.tasks.shutdown(0);
    await built.app.close();
    built.troupe.close();
  }
});

/**
 * An app on a fresh data directory: the offline model, or a scripted one when steps are given;
 * the config file's `tools` section as `toolsConfig` (grants, approvals).
 * Rate limit and overload checks are off unless the test turns them on; logs are collected.
 */
export async function makeApp(
  options: { steps?: ScriptStep[]; config?: ServerConfigInput; telemetry?: Telemetry; pressureSampleIntervalMs?: number; toolsConfig?: unknown; troupe?: Partial<TroupeOptions> } = {},
): Promise<TestApp> {
  const directory = tempDir("troupe-server-");
  const model = options.steps ? new ScriptedChatModel({ steps: options.steps }) : undefined;
  const troupe = await Troupe.create({
    ...(model ? { models: modelSetOf(model) } : { provider: "offline" }),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    ...(options.toolsConfig !== undefined ? { toolsConfig: options.toolsConfig } : {}),
    ...options.troupe,
  });
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const built = await createApp({
    troupe,
    config: { rateLimitPerMinute: 0, maxEventLoopDelayMs: 0, ...options.config },
    logger: createLogger("info", sink),
    telemetry: options.telemetry,
    pressureSampleIntervalMs: options.pressureSampleIntervalMs,
  });
  await built.app.ready();
  const testApp: TestApp = { ...built, troupe, model, logs, directory };
  open.push(testApp);
  return testApp;
}

export interface Envelope<T = Record<string, unknown>> {
  code: string;
  message: string;
  data: T;
}

export function envelope<T = Record<string, unknown>>(response: LightMyRequestResponse): Envelope<T> {
  return response.json() as Envelope<T>;
}


/** Waits until a task's status is one of `statuses`, and returns the task view. */
export async function waitForStatus(app: TestApp, taskId: string, statuses: string[], headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  return waitFor(async () => {
    const response = await app.app.inject({ method: "GET", url: `/api/v1/tasks/${taskId}`, headers });
    const data = envelope(response).data;
    return statuses.includes(data.status as string) ? data : undefined;
  }, `task ${taskId} to be ${statuses.join(" or ")}`);
}

/** Parses an SSE body into its events (id, event, data). */
export function parseSse(body: string): Array<{ id: number; event: string; data: Record<string, unknown> }> {
  return body
    .split("\n\n")
    .map((block) => block.trim())
    .filter((block) => block.includes("data:"))
    .map((block) => {
      const fields = Object.fromEntries(
        block.split("\n").map((line) => {
          const colon = line.indexOf(":");
          return [line.slice(0, colon), line.slice(colon + 1).trim()];
        }),
      ) as Record<string, string>;
      return { id: Number(fields.id), event: fields.event ?? "", data: JSON.parse(fields.data ?? "{}") as Record<string, unknown> };
    });
}
