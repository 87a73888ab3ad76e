import path from "node:path";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { afterEach } from "vitest";
import { z } from "zod";
import { createAgentRegistry } from "../src/agents/index.js";
import { defineAgent } from "../src/agents/define-agent.js";
import type { TroupeConfig } from "../src/config/config-file.js";
import { parseEnv } from "../src/config/env.js";
import type { StoredEvent } from "../src/core/events.js";
import type { RunRequestInput, RunResult } from "../src/core/run.js";
import type { CallPolicy } from "../src/providers/call-policy.js";
import { OfflineChatModel } from "../src/providers/offline/offline-chat-model.js";
import { Troupe } from "../src/runtime/engine.js";
import { FakeAnthropicServer } from "../src/testing/fake-anthropic-server.js";
import { FakeOpenAIServer } from "../src/testing/fake-openai-server.js";
import type { FakeProviderServer } from "../src/testing/fake-server.js";
import { createBuiltinRegistry } from "../src/tools/builtin/index.js";
import { defineTool } from "../src/tools/define-tool.js";
import { tempDir } from "./helpers.js";

/**
 * A task the offline model gives a worker: it computes two values by direct steps, then a worker
 * saves both through a template (result.txt holds "397.8\n23.4"). For tests of a worker's model
 * call, and of the critic's whatever the review mode (`review: auto` skips the critic when every
 * outcome is a verified direct result). The README's task ("compute 17% of 2,340 and save it to
 * result.txt") is direct steps only.
 */
export const WORKER_TASK = "compute 17% of 2,340 and 1% of 2,340, then save both to result.txt";

const servers: FakeProviderServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A fake OpenAI-compatible server on loopback, closed after the test. Its brain is the offline model unless given. */
export async function fakeOpenAI(brain: BaseChatModel = new OfflineChatModel({})): Promise<FakeOpenAIServer> {
  const server = await new FakeOpenAIServer(brain).start();
  servers.push(server);
  return server;
}

/** A fake Anthropic Messages server on loopback, closed after the test. */
export async function fakeAnthropic(brain: BaseChatModel = new OfflineChatModel({})): Promise<FakeAnthropicServer> {
  const server = await new FakeAnthropicServer(brain).start();
  servers.push(server);
  return server;
}

/** Environment pointing the providers at the fakes (keys are dummies the fakes accept). */
export function envFor(servers: { openai?: FakeOpenAIServer; anthropic?: FakeAnthropicServer }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...(servers.openai ? { OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: servers.openai.baseUrl, OPENAI_COMPATIBLE_BASE_URL: servers.openai.baseUrl } : {}),
    ...(servers.anthropic ? { ANTHROPIC_API_KEY: "sk-ant-fake", ANTHROPIC_BASE_URL: servers.anthropic.baseUrl } : {}),
    // The review mode the tests run with (vitest.config.ts).
    ...(process.env.TROUPE_REVIEW ? { TROUPE_REVIEW: process.env.TROUPE_REVIEW } : {}),
    ...extra,
  };
}

/** Backoff short enough for tests; the retry counts and Retry-After are still honoured. */
export const FAST_RETRIES: Partial<CallPolicy> = { backoffBaseMs: 5, backoffMaxMs: 50 };

/**
 * A tool with a side effect (it appends a line to `payments.log` in the workspace), given to a
 * `payments` agent, so tests can check it ran exactly once whatever the model calls went through.
 */
export const recordPaymentTool = defineTool({
  name: "record_payment",
  description: "Records a payment (appends it to payments.log). Not idempotent.",
  schema: z.object({ amount: z.number() }),
  permission: "WRITE",
  riskLevel: "medium",
  idempotent: false,
  timeoutMs: 5_000,
  async execute(args, context) {
    const { appendFile } = await import("node:fs/promises");
    await appendFile(path.join(context.workspace, "payments.log"), `${args.amount}\n`);
    return { recorded: args.amount };
  },
});

export interface ProviderRun {
  troupe: Troupe;
  result: RunResult;
  events: StoredEvent[];
  workspace: string;
}

/** Runs a task in-process on a real provider (pointed at the fakes), in temporary directories. */
export async function runOnProvider(
  env: Record<string, string>,
  request: RunRequestInput,
  options: { config?: TroupeConfig; policy?: Partial<CallPolicy>; signal?: AbortSignal; onEvent?: (event: StoredEvent) => void; prepare?: (workspace: string) => void } = {},
): Promise<ProviderRun> {
  const directory = tempDir();
  const workspace = path.join(directory, "workspace");
  const tools = createBuiltinRegistry().register(recordPaymentTool);
  const agents = createAgentRegistry().register(
    defineAgent({ name: "payments", description: "records payments", tools: ["record_payment"], instructions: "Record the payment with record_payment, then answer with what was recorded." }),
  );
  const troupe = await Troupe.create({
    env: parseEnv(env),
    config: options.config ?? {},
    callPolicy: { ...FAST_RETRIES, ...options.policy },
    dataDir: path.join(directory, "data"),
    workspace,
    tools,
    agents,
  });
  const events: StoredEvent[] = [];
  try {
    options.prepare?.(workspace);
    const result = await troupe.run(request, {
      signal: options.signal,
      onEvent: (event) => {
        events.push(event);
        options.onEvent?.(event);
      },
    });
    return { troupe, result, events, workspace };
  } finally {
    troupe.close();
  }
}
