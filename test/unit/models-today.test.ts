import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { describeTokens } from "../../src/core/run.js";
import { costOf, priceFor } from "../../src/providers/prices.js";
import { answerStep, outcomeStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { envFor, fakeAnthropic, fakeOpenAI, runOnProvider, WORKER_TASK } from "../provider-helpers.js";

const TASK = "compute 17% of 2,340 and save it to result.txt";

type WireMessage = { role: string; content: unknown };

describe("reasoning models", () => {
  it("openai o4-mini: no temperature, max_completion_tokens, reasoning_effort, the developer role; reasoning tokens counted and priced", async () => {
    const openai = await fakeOpenAI();
    const config = { providers: { openai: { reasoningEffort: "high" as const, maxTokens: 2_000 } } };
    const { result, workspace } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai:o4-mini" }), { task: TASK }, { config });
    expect(result.status, result.error).toBe("completed");
    expect(readFileSync(path.join(workspace, "result.txt"), "utf8")).toBe("397.8");
    for (const request of openai.requests) {
      // The fake refuses `temperature` and `max_tokens` for a reasoning model, as OpenAI does.
      expect(request.body).not.toHaveProperty("temperature");
      expect(request.body).not.toHaveProperty("max_tokens");
      expect(request.body.max_completion_tokens).toBe(2_000);
      expect(request.body.reasoning_effort).toBe("high");
      expect((request.body.messages as WireMessage[])[0]?.role).toBe("developer");
    }
    const reasoning = openai.requests.reduce((sum, request) => sum + (request.usage?.reasoning ?? 0), 0);
    expect(reasoning).toBeGreaterThan(0);
    expect(result.metrics.reasoningTokens).toBe(reasoning);
    expect(result.trace.reasoningTokens).toBe(reasoning);
    const reported = openai.reportedUsage();
    // Reasoning tokens are output tokens: priced at the output rate.
    expect(result.metrics.costUsd).toBeCloseTo((reported.input * 1.1 + reported.output * 4.4) / 1_000_000, 12);
    expect(describeTokens(result.metrics)).toMatch(new RegExp(`completion \\(${reasoning} reasoning\\)$`));
  });

  it("anthropic extended thinking: no forced tool, thinking blocks come back and are sent back with tool results", async () => {
    const anthropic = await fakeAnthropic();
    const config = { providers: { anthropic: { thinkingBudget: 2_048 } } };
    const { result, workspace } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic:claude-sonnet-4-5" }), { task: WORKER_TASK }, { config });
    expect(result.status, result.error).toBe("completed");
    expect(readFileSync(path.join(workspace, "result.txt"), "utf8")).toBe("397.8\n23.4");
    for (const request of anthropic.requests) {
      expect(request.body.thinking).toEqual({ type: "enabled", budget_tokens: 2_048 });
      // Room for the answer on top of the thinking; the API refuses a forced tool while thinking.
      expect(request.body.max_tokens).toBe(4_096 + 2_048);
      expect((request.body.tool_choice as { type?: string } | undefined)?.type ?? "auto").toBe("auto");
    }
    // A worker's second call sends its first answer back with the thinking block first, signed as it came.
    const second = anthropic.requestsFor("execute")[1]?.body.messages as WireMessage[];
    const answered = second.find((message) => message.role === "assistant") as { content: Array<{ type: string; signature?: string }> };
    expect(answered.content[0]?.type).toBe("thinking");
    expect(answered.content[0]?.signature).toMatch(/^fake-signature-/);
    expect(answered.content.some((block) => block.type === "tool_use")).toBe(true);
  });
});

describe("context overflow in a long worker loop", () => {
  it("compacts the loop's history (earlier tool results as handles) and tries once more, never crashing or answering empty", async () => {
    const brain = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "research", "Read big.txt and count its words", { tools: ["file_read", "text_stats"] })]),
        toolStep("s1", "file_read", { path: "big.txt" }),
        toolStep("s1", "text_stats", { path: "big.txt" }, { contains: '"$stash":"results.1"' }),
        // The call after the overflow (the file's content gone from the conversation, its handle and summary kept: see below).
        outcomeStep("s1", { status: "done", from: "results.2", path: "$.words" }, { contains: '"$stash":"results.2"' }),
        reviewStep(0.9),
        // One subtask, but it read a workspace file, untrusted on the defaults: the synthesizer words the answer (no fast route).
        answerStep("3000"),
      ],
    });
    const openai = await fakeOpenAI(brain);
    openai.inject({ kind: "context-overflow" }, { role: "research", skip: 2 });
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: "count the words of big.txt" }, {
      onEvent: () => undefined,
      prepare: (workspace) => writeFileSync(path.join(workspace, "big.txt"), "lorem ipsum dolor ".repeat(1_000)),
    });
    brain.assertDone();
    expect(result.status, result.error).toBe("completed");
    expect(result.plan[0]?.summary).toBe("3000");
    const research = openai.requestsFor("research");
    expect(research.map((request) => request.fault ?? "ok")).toEqual(["ok", "ok", "context-overflow", "ok"]);
    const before = JSON.stringify(research[2]?.body.messages);
    const after = JSON.stringify(research[3]?.body.messages);
    expect(before).toContain("lorem ipsum dolor lorem");
    expect(after).not.toContain("lorem ipsum dolor lorem");
    expect(after).toContain('{\\"ok\\":true,\\"summary\\":\\"big.txt: 18000 bytes\\",\\"compacted\\":true,\\"$stash\\":\\"results.1\\"}');
    expect(after.length).toBeLessThan(before.length - 1_500);
    expect(result.trace.modelIncidents).toEqual([expect.objectContaining({ kind: "retry", subtaskId: "s1", reason: expect.stringMatching(/context window: earlier tool results compacted/) })]);
  });

  it("fails the subtask honestly when even the compacted prompt does not fit", async () => {
    const brain = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "research", "Read big.txt and count its words", { tools: ["file_read"] })]),
        toolStep("s1", "file_read", { path: "big.txt" }),
        reviewStep(0.2),
        answerStep("It could not be done."),
      ],
    });
    const openai = await fakeOpenAI(brain);
    openai.inject({ kind: "context-overflow" }, { role: "research", skip: 1, times: 2 });
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai" }), { task: "count the words of big.txt" }, {
      prepare: (workspace) => writeFileSync(path.join(workspace, "big.txt"), "lorem ipsum ".repeat(100)),
    });
    brain.assertDone();
    expect(result.status).toBe("failed");
    expect(result.plan[0]).toMatchObject({ status: "failed", error: expect.stringMatching(/the prompt is larger than the model's context window/) });
  });
});

describe("prompt caching", () => {
  it("anthropic: breakpoints on the system prompt and the last block; cache reads and writes read from the usage, priced at their rates, in metrics and trace", async () => {
    const anthropic = await fakeAnthropic();
    anthropic.caching = "breakpoints";
    const { result } = await runOnProvider(envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic:claude-haiku-4-5" }), { task: WORKER_TASK });
    expect(result.status, result.error).toBe("completed");
    for (const request of anthropic.requests) {
      expect(request.body.cache_control).toEqual({ type: "ephemeral" });
      expect((request.body.system as Array<{ cache_control?: unknown }>).at(-1)?.cache_control).toEqual({ type: "ephemeral" });
    }
    const read = anthropic.requests.reduce((sum, request) => sum + (request.usage?.cacheRead ?? 0), 0);
    const written = anthropic.requests.reduce((sum, request) => sum + (request.usage?.cacheWrite ?? 0), 0);
    expect(read).toBeGreaterThan(0);
    expect(result.metrics.cachedPromptTokens).toBe(read);
    expect(result.metrics.cacheWriteTokens).toBe(written);
    expect(result.trace.cachedPromptTokens).toBe(read);
    const price = priceFor("anthropic", "claude-haiku-4-5");
    const prompts = anthropic.requests.reduce(
      (sum, request) => sum + costOf(price, { promptTokens: request.usage?.input ?? 0, completionTokens: 0, cachedPromptTokens: request.usage?.cacheRead, cacheWriteTokens: request.usage?.cacheWrite }),
      0,
    );
    // (Completion tokens as the client counts them: a stream's message_start reports one of its own.)
    expect(result.metrics.costUsd).toBeCloseTo(prompts + (result.metrics.completionTokens * 5) / 1_000_000, 12);
    // Cheaper than the same tokens at the input price.
    expect(result.metrics.costUsd).toBeLessThan(costOf({ input: 1, output: 5 }, { promptTokens: result.metrics.promptTokens, completionTokens: result.metrics.completionTokens }));
  });

  it("openai: the provider's automatic prefix cache read from prompt_tokens_details.cached_tokens and priced at the cached rate", async () => {
    const openai = await fakeOpenAI();
    openai.caching = "automatic";
    const { result } = await runOnProvider(envFor({ openai }, { TROUPE_PROVIDER: "openai:gpt-4o-mini" }), { task: WORKER_TASK });
    expect(result.status, result.error).toBe("completed");
    const read = openai.requests.reduce((sum, request) => sum + (request.usage?.cacheRead ?? 0), 0);
    expect(read).toBeGreaterThan(0);
    expect(result.metrics.cachedPromptTokens).toBe(read);
    const reported = openai.reportedUsage();
    expect(result.metrics.costUsd).toBeCloseTo(((reported.input - read) * 0.15 + read * 0.075 + reported.output * 0.6) / 1_000_000, 12);
    expect(describeTokens(result.metrics)).toMatch(new RegExp(`prompt \\(${read} cached\\)`));
  });
});
