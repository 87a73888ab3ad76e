import { readFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { HumanMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { describe, expect, it } from "vitest";
import { callModel, UsageMeter } from "../../src/agents/model-call.js";
import { ModelError } from "../../src/core/errors.js";
import { DEFAULT_CALL_POLICY } from "../../src/providers/call-policy.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { eventsOf } from "../helpers.js";
import { envFor, FAST_RETRIES, fakeAnthropic, fakeOpenAI, runOnProvider, WORKER_TASK } from "../provider-helpers.js";

const TASK = "compute 17% of 2,340 and save it to result.txt";

/** A brain whose plan has a worker with a side-effecting tool: record_payment, then an answer. */
function paymentBrain(): ScriptedChatModel {
  return new ScriptedChatModel({
    steps: [
      planStep([subtask("s1", "payments", "Record a payment of 42")]),
      toolStep("s1", "record_payment", { amount: 42 }),
      finalStep("s1", "recorded a payment of 42"),
      reviewStep(0.9),
      answerStep("A payment of 42 was recorded."),
    ],
  });
}

async function until(check: () => boolean): Promise<void> {
  for (let waited = 0; !check(); waited += 1) {
    if (waited > 2_000) throw new Error("condition not met");
    await sleep(5);
  }
}

describe("a run on each real provider client, against fake servers", () => {
  it("openai: plan on the compact wire (text), reviews through the JSON-schema response format, tools through tool calls, a streamed answer, usage and cost", async () => {
    const openai = await fakeOpenAI();
    const { result, events, workspace } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai:gpt-4o-mini" }), { task: WORKER_TASK });
    expect(result.status).toBe("completed");
    expect(result.answer).toContain("397.8");
    expect(readFileSync(path.join(workspace, "result.txt"), "utf8")).toBe("397.8\n23.4");
    expect(openai.requestsFor("planner")[0]?.structured).toBeUndefined();
    expect(openai.requestsFor("critic")[0]?.structured).toBe("json_schema");
    // A worker's step (the write of both): the synthesizer words the answer.
    expect(result.trace.answerSource?.by).toBe("synthesizer");
    expect(openai.requestsFor("execute").some((request) => Array.isArray(request.body.tools))).toBe(true);
    expect(openai.requestsFor("synthesizer")[0]?.stream).toBe(true);
    const reported = openai.reportedUsage();
    expect(result.metrics.promptTokens).toBe(reported.input);
    expect(result.metrics.completionTokens).toBe(reported.output);
    expect(result.metrics.costUsd).toBeCloseTo((reported.input * 0.15 + reported.output * 0.6) / 1_000_000, 12);
    expect(result.trace.models.planner).toBe("openai:gpt-4o-mini");
    const tokens = eventsOf(events, "answer-token");
    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.map((event) => event.text).join("").trim()).toBe(result.answer);
  });

  it("anthropic: plan on the compact wire, reviews through a forced tool_use, a streamed answer with usage from the SSE events", async () => {
    const anthropic = await fakeAnthropic();
    const { result, events, workspace } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic:claude-3-5-haiku-latest" }), { task: WORKER_TASK });
    expect(result.status).toBe("completed");
    expect(readFileSync(path.join(workspace, "result.txt"), "utf8")).toBe("397.8\n23.4");
    expect(anthropic.requestsFor("planner")[0]?.structured).toBeUndefined();
    expect(anthropic.requestsFor("critic")[0]?.structured).toBe("tool");
    expect(anthropic.requestsFor("synthesizer")[0]?.stream).toBe(true);
    expect(result.metrics.promptTokens).toBe(anthropic.reportedUsage().input);
    expect(result.metrics.costUsd).toBeGreaterThan(0);
    expect(eventsOf(events, "answer-token").map((event) => event.text).join("").trim()).toBe(result.answer);
  });

  it("anthropic with the JSON plan wire and JSON outputs configured asks through output_config.format", async () => {
    const anthropic = await fakeAnthropic();
    const config = { providers: { anthropic: { structuredOutput: "jsonSchema" as const, planWire: "json" as const } } };
    const { result } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic" }), { task: TASK }, { config });
    expect(result.status).toBe("completed");
    expect(anthropic.requestsFor("planner")[0]?.structured).toBe("json_schema");
  });

  it("openai-compatible: any Chat Completions server at a base URL, structured answers through a forced tool call", async () => {
    const server = await fakeOpenAI();
    const { result } = await runOnProvider(envFor({ openai: server }, { TROUPE_PROVIDER: "openai-compatible:qwen2.5-7b-instruct" }), { task: TASK });
    expect(result.status).toBe("completed");
    expect(server.requestsFor("planner")[0]?.structured).toBe("tool");
    expect(server.requestsFor("planner")[0]?.body.model).toBe("qwen2.5-7b-instruct");
    // No price is known for it: tokens are counted, the cost stays 0.
    expect(result.metrics.promptTokens).toBeGreaterThan(0);
    expect(result.metrics.costUsd).toBe(0);
  });

  it("uses a model per role from the config file", async () => {
    const openai = await fakeOpenAI();
    const config = { provider: "openai:gpt-4o-mini", roles: { planner: "gpt-4.1", critic: "openai:gpt-4.1" } };
    const { result } = await runOnProvider(envFor({ openai }), { task: WORKER_TASK }, { config });
    expect(result.status).toBe("completed");
    expect(openai.requestsFor("planner")[0]?.body.model).toBe("gpt-4.1");
    expect(openai.requestsFor("critic")[0]?.body.model).toBe("gpt-4.1");
    expect(openai.requestsFor("execute")[0]?.body.model).toBe("gpt-4o-mini");
    expect(result.trace.models).toEqual({ planner: "openai:gpt-4.1", worker: "openai:gpt-4o-mini", critic: "openai:gpt-4.1", synthesizer: "openai:gpt-4o-mini" });
  });
});

describe("faults on the wire", () => {
  it("retries 500, a connection reset and 429 as configured; the side-effecting tool runs exactly once", async () => {
    const openai = await fakeOpenAI(paymentBrain());
    openai.inject({ kind: "status", status: 500 }, { role: "payments", skip: 1 });
    openai.inject({ kind: "reset" }, { role: "payments" });
    openai.inject({ kind: "status", status: 429, retryAfter: "0" }, { role: "payments" });
    const { result, workspace } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: "record a payment of 42" });
    expect(result.status).toBe("completed");
    expect(readFileSync(path.join(workspace, "payments.log"), "utf8")).toBe("42\n");
    expect(openai.requestsFor("payments").map((request) => request.fault ?? "ok")).toEqual(["ok", "status", "reset", "status", "ok"]);
    const retries = result.trace.modelIncidents.filter((incident) => incident.kind === "retry");
    expect(retries.map((incident) => [incident.subtaskId, incident.attempt, incident.reason])).toEqual([
      ["s1", 1, "HTTP 500"],
      ["s1", 2, "connection reset"],
      ["s1", 3, "HTTP 429"],
    ]);
    expect(result.trace.toolCalls.filter((call) => call.tool === "record_payment")).toHaveLength(1);
  });

  it("makes exactly 1 + TROUPE_MAX_RETRIES attempts, then the step fails cleanly and the run goes on", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "status", status: 503 }, { role: "critic", times: 10 });
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai", TROUPE_MAX_RETRIES: "2" }), { task: WORKER_TASK });
    expect(openai.requestsFor("critic")).toHaveLength(3);
    // The run goes on to an answer, but a review that never passed is not a completed run.
    expect(result.status).toBe("failed");
    expect(result.answer).toMatch(/397\.8/);
    expect(result.trace.reviews[0]?.issues[0]).toMatch(/the critic failed: openai:gpt-4\.1-mini failed after 3 attempts: HTTP 503/);
  });

  it("waits as long as Retry-After asks before trying again", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "status", status: 429, retryAfter: "1" }, { role: "planner" });
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: TASK });
    expect(result.status).toBe("completed");
    const [first, second] = openai.requestsFor("planner");
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(990);
    expect(result.trace.modelIncidents[0]).toMatchObject({ kind: "retry", role: "planner", reason: "HTTP 429", delayMs: 1000 });
  });

  it("gives up on a response slower than the timeout and retries", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "delay", ms: 20_000 }, { role: "critic" });
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai", TROUPE_TIMEOUT_MS: "300" }), { task: WORKER_TASK });
    expect(result.status).toBe("completed");
    const [slow, next] = openai.requestsFor("critic");
    expect(slow?.abandoned).toBe(true);
    expect(next?.fault).toBeUndefined();
    expect(result.trace.modelIncidents[0]).toMatchObject({ kind: "retry", role: "critic", reason: "timed out after 300 ms" });
  });

  it("sends invalid JSON in a structured answer back once with the error, then uses the repaired answer", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "invalid-json" }, { role: "planner" });
    const config = { providers: { openai: { planWire: "json" as const } } };
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: TASK }, { config });
    expect(result.status).toBe("completed");
    const planner = openai.requestsFor("planner");
    expect(planner).toHaveLength(2);
    const repair = JSON.stringify((planner[1]?.body.messages as unknown[]).at(-1));
    expect(repair).toMatch(/That answer was not valid/);
    expect(result.answer).toContain("397.8");
  });

  it("fails the step cleanly when the repaired answer is invalid too (invalid tool arguments on the critic)", async () => {
    const server = await fakeOpenAI();
    server.inject({ kind: "invalid-json" }, { role: "critic", times: 2 });
    const { result } = await runOnProvider(envFor({ openai: server }, { TROUPE_PROVIDER: "openai-compatible:local" }), { task: WORKER_TASK });
    expect(result.status).toBe("failed");
    expect(server.requestsFor("critic")).toHaveLength(2);
    expect(result.trace.reviews[0]?.passed).toBe(false);
    expect(result.trace.reviews[0]?.issues[0]).toMatch(/submit_review answer was invalid after one repair: the arguments of submit_review were not valid JSON/);
  });

  it("retries a truncated stream; the streamed answer starts again after the retry", async () => {
    for (const mode of ["reset", "end"] as const) {
      const anthropic = await fakeAnthropic();
      anthropic.inject({ kind: "truncate", mode }, { role: "synthesizer" });
      const { result, events } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic" }), { task: WORKER_TASK });
      expect(result.status).toBe("completed");
      expect(anthropic.requestsFor("synthesizer")).toHaveLength(2);
      const retry = events.findIndex((event) => event.type === "model-retry");
      expect(retry).toBeGreaterThan(0);
      const before = events.slice(0, retry).filter((event) => event.type === "answer-token");
      const after = eventsOf(events.slice(retry), "answer-token");
      // A stream closed half way has shown its first half (a reset may drop what was in flight).
      if (mode === "end") expect(before.length).toBeGreaterThan(0);
      expect(after.map((event) => event.text).join("").trim()).toBe(result.answer);
    }
  });

  it("falls back along the chain when a model keeps failing, records it in the trace, and stays on the fallback", async () => {
    const openai = await fakeOpenAI();
    const anthropic = await fakeAnthropic();
    openai.inject({ kind: "status", status: 500 }, { times: 100 });
    const config = { fallbacks: ["anthropic:claude-haiku-4-5"] };
    const { result, events } = await runOnProvider(envFor({ openai, anthropic }, { TROUPE_PROVIDER: "openai", TROUPE_MAX_RETRIES: "1" }), { task: TASK }, { config });
    expect(result.status).toBe("completed");
    expect(result.answer).toContain("397.8");
    expect(openai.requests).toHaveLength(2);
    expect(anthropic.requestsFor("planner")).toHaveLength(1);
    const fallbacks = result.trace.modelIncidents.filter((incident) => incident.kind === "fallback");
    expect(fallbacks).toEqual([expect.objectContaining({ role: "planner", model: "openai:gpt-4.1-mini", to: "anthropic:claude-haiku-4-5", attempt: 2, reason: "HTTP 500" })]);
    expect(eventsOf(events, "model-fallback")).toHaveLength(1);
  });

  it("a call that fails on every model of its chain reports each attempt's cause, not only the last", async () => {
    const openai = await fakeOpenAI();
    const anthropic = await fakeAnthropic();
    openai.inject({ kind: "status", status: 500 }, { role: "critic", times: 100 });
    anthropic.inject({ kind: "status", status: 503 }, { role: "critic", times: 100 });
    const config = { fallbacks: ["anthropic:claude-haiku-4-5"] };
    const { result } = await runOnProvider(envFor({ openai, anthropic }, { TROUPE_PROVIDER: "openai", TROUPE_MAX_RETRIES: "1" }), { task: WORKER_TASK }, { config });
    expect(result.trace.reviews[0]?.issues[0]).toContain(
      "anthropic:claude-haiku-4-5 failed after 2 attempts: HTTP 503 (every attempt: openai:gpt-4.1-mini #1: HTTP 500; openai:gpt-4.1-mini #2: HTTP 500; anthropic:claude-haiku-4-5 #1: HTTP 503; anthropic:claude-haiku-4-5 #2: HTTP 503)",
    );
  });

  it("ModelError keeps every attempt with its cause (the real OpenAI client against the fake)", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "status", status: 500 }, { times: 1 });
    openai.inject({ kind: "reset" }, { times: 1 });
    openai.inject({ kind: "status", status: 503 }, { times: 1 });
    const model = new ChatOpenAI({ model: "gpt-4.1-mini", apiKey: "sk-fake", maxRetries: 0, configuration: { baseURL: openai.baseUrl } });
    const candidate = { choice: { provider: "openai", model: "gpt-4.1-mini" }, model, structuredMethod: "functionCalling" as const, streams: false, price: undefined };
    const route = { role: "synthesizer" as const, candidates: [candidate], policy: { ...DEFAULT_CALL_POLICY, ...FAST_RETRIES, maxRetries: 2 } };
    const failed = await callModel(route, [new HumanMessage("hello")], { meter: new UsageMeter() }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ModelError);
    const error = failed as ModelError;
    expect(error.code).toBe("model_call_failed");
    expect(error.attempts.map((entry) => [entry.model, entry.attempt, entry.reason])).toEqual([
      ["openai:gpt-4.1-mini", 1, "HTTP 500"],
      ["openai:gpt-4.1-mini", 2, "connection reset"],
      ["openai:gpt-4.1-mini", 3, "HTTP 503"],
    ]);
    expect(error.attempts.every((entry) => entry.error instanceof Error)).toBe(true);
    expect(error.cause).toBe(error.attempts[2]?.error);
  });

  it("aborts the model call in flight when the run is cancelled", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "delay", ms: 30_000 }, { role: "planner" });
    const controller = new AbortController();
    const running = runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: TASK }, { signal: controller.signal });
    await until(() => openai.requests.length === 1);
    controller.abort();
    const { result } = await running;
    expect(result.status).toBe("cancelled");
    await until(() => openai.requests[0]?.abandoned === true);
    expect(openai.requests).toHaveLength(1);
  });
});

describe("budgets", () => {
  const stopped = (result: { status: string; stopReason: string | null }) => ({ status: result.status, stopReason: result.stopReason });

  it("max model calls: stops before the call that would pass it, with the best answer so far", async () => {
    const openai = await fakeOpenAI();
    const { result, events } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: WORKER_TASK, budget: { maxModelCalls: 3 } });
    expect(stopped(result)).toEqual({ status: "failed", stopReason: "budget_exhausted" });
    expect(openai.requests).toHaveLength(3);
    expect(result.metrics.llmCalls).toBe(3);
    expect(result.trace.budget).toEqual({ limit: "maxModelCalls", max: 3, used: 3 });
    expect(result.answer).toMatch(/budget ran out \(model calls: 3 of 3\)/);
    // s1 is a direct calculator step: its line is the tool's summary.
    expect(result.answer).toMatch(/s1 Compute 17% of 2,340: 17% of 2,340 = 397\.8/);
    expect(eventsOf(events, "budget-exhausted")).toHaveLength(1);
  });

  it("max tokens", async () => {
    const openai = await fakeOpenAI();
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: TASK, budget: { maxTokens: 900 } });
    expect(stopped(result)).toEqual({ status: "failed", stopReason: "budget_exhausted" });
    expect(result.trace.budget?.limit).toBe("maxTokens");
    expect(openai.requests.length).toBeLessThan(7);
  });

  it("max cost, with prices from the config file", async () => {
    const openai = await fakeOpenAI();
    const config = { prices: { "gpt-4o-mini": { input: 1000, output: 1000 } } };
    // At $1,000 per million tokens the planner's prompt costs about $1.80 (it lists every tool with
    // its parameters and every agent, the tool platform's included): it fits the $1.85 limit, no
    // worker's prompt fits beside it while it streams, and the call with its answer is past it, so
    // exactly one request is made (a plan of direct steps alone would finish without another call).
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai:gpt-4o-mini" }), { task: WORKER_TASK, budget: { maxCostUsd: 1.85 } }, { config });
    expect(stopped(result)).toEqual({ status: "failed", stopReason: "budget_exhausted" });
    expect(result.trace.budget?.limit).toBe("maxCostUsd");
    expect(openai.requests).toHaveLength(1);
    expect(result.metrics.costUsd).toBeCloseTo((openai.reportedUsage().input + openai.reportedUsage().output) / 1000, 9);
  });

  it("max wall time: the call in flight is aborted when the time is up", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "delay", ms: 30_000 }, { role: "execute" });
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: WORKER_TASK, budget: { maxWallTimeMs: 500 } });
    expect(stopped(result)).toEqual({ status: "failed", stopReason: "budget_exhausted" });
    expect(result.trace.budget?.limit).toBe("maxWallTimeMs");
    await until(() => openai.requestsFor("execute")[0]?.abandoned === true);
    expect(result.answer).toMatch(/budget ran out \(wall time/);
  });
});
