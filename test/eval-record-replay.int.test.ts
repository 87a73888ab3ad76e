import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { describe, expect, it } from "vitest";
import { parseSections, roleOf } from "../src/core/prompt-protocol.js";
import type { CassetteFile } from "../src/eval/cassette.js";
import type { EvalResults } from "../src/eval/results.js";
import { OfflineChatModel } from "../src/providers/offline/offline-chat-model.js";
import type { ToolCallingCallOptions } from "../src/providers/tool-calling-chat-model.js";
import { runCli, tempDir } from "./helpers.js";
import { envFor, fakeAnthropic, fakeOpenAI } from "./provider-helpers.js";

const textOf = (message: BaseMessage | undefined): string => (message ? (typeof message.content === "string" ? message.content : message.text) : "");

/**
 * The fake server's brain: the offline model for troupe's roles, and for the judge a rule a
 * test can predict — full marks when the answer holds the text the rubric quotes, almost none
 * otherwise — answered through the forced `submit_judgement` call, as a real model would.
 */
class QuotingJudgeBrain extends OfflineChatModel {
  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    if (roleOf(textOf(messages.find((message) => message.getType() === "system"))) !== "judge") return super._generate(messages, options);
    const sections = parseSections(textOf(messages.findLast((message) => message.getType() === "human")));
    const quoted = /"([^"]+)"/.exec(sections.get("Rubric") ?? "")?.[1] ?? "";
    const holds = quoted !== "" && (sections.get("Answer") ?? "").includes(quoted);
    const args = { score: holds ? 0.95 : 0.1, reason: `the answer ${holds ? "states" : "does not state"} "${quoted}"` };
    return { generations: [{ text: "", message: new AIMessage({ content: "", tool_calls: [{ id: "judge_1", name: "submit_judgement", args, type: "tool_call" }] }) }] };
  }
}

function writeSuite(file: string, cases: Array<Record<string, unknown>>): void {
  writeFileSync(file, `${cases.map((item) => JSON.stringify(item)).join("\n")}\n`);
}

const SUITE = [
  { id: "saves", task: "compute 17% of 2,340 and save it to result.txt", expect: { files: { "result.txt": "397.8" }, judge: 'the answer states "397.8"' } },
  { id: "judge-fails", task: "compute 6*7 and save it to answer.txt", expect: { files: { "answer.txt": "42" }, judge: { rubric: 'the answer states "43"', min_score: 0.5 } } },
  { id: "cost-fails", task: "compute 6*7 and save it to answer.txt", expect: { max_cost_usd: 0.000001 } },
  { id: "fails-honestly", task: "write a poem about the sea", expect: { status: "failed", answer_includes: "needs a language model" } },
  { id: "map", task: "for each of the files in data/, count the lines", files: { "data/x.txt": "1\n2\n3\n", "data/y.txt": "a b\n" }, expect: { answer_includes: ["3", "1"] } },
];

/** What must be the same between a recorded and a replayed eval: each case's verdict, its failures and its figures. */
function verdicts(results: EvalResults) {
  return results.cases.map((item) => ({
    id: item.id,
    passed: item.passed,
    status: item.status,
    failures: item.failures,
    answer: item.answer,
    llmCalls: item.metrics.llmCalls,
    promptTokens: item.metrics.promptTokens,
    completionTokens: item.metrics.completionTokens,
    costUsd: item.metrics.costUsd,
    judge: item.judge ? { judged: item.judge.judged, score: item.judge.score, passed: item.judge.passed, reason: item.judge.reason, model: item.judge.model } : undefined,
  }));
}

describe("troupe eval --record and --replay (the real provider clients against the fake servers)", () => {
  it("records every request and reply, then replays them with the server stopped and no key, giving the same verdicts", async () => {
    const openai = await fakeOpenAI(new QuotingJudgeBrain({}));
    const directory = tempDir("troupe-eval-cassettes-");
    const suite = path.join(directory, "suite.jsonl");
    writeSuite(suite, SUITE);
    const cassettes = path.join(directory, "cassettes");
    const recordRun = await runCli(["eval", suite, "--provider", "openai:gpt-4o-mini", "--record", cassettes, "--json", "--data-dir", path.join(directory, "recorded")], { cwd: directory, env: envFor({ openai }) });
    expect(recordRun.code).toBe(1);
    const recorded = JSON.parse(recordRun.stdout) as EvalResults;
    expect(recorded).toMatchObject({ provider: "openai:gpt-4o-mini", mode: "record", total: 5, passed: 3, judged: 2, notJudged: 0 });
    const byId = new Map(recorded.cases.map((item) => [item.id, item]));
    expect(byId.get("saves")).toMatchObject({ passed: true, failures: [], judge: { judged: true, score: 0.95, passed: true, model: "openai:gpt-4o-mini" } });
    expect(byId.get("judge-fails")?.failures).toEqual([{ expectation: "judge", message: 'scored 0.1 (below 0.5): the answer does not state "43"' }]);
    expect(byId.get("cost-fails")?.failures.map((failure) => failure.expectation)).toEqual(["max_cost_usd"]);
    expect(byId.get("cost-fails")?.metrics.costUsd).toBeGreaterThan(0.000001);
    expect(byId.get("fails-honestly")).toMatchObject({ passed: true, status: "failed" });
    expect(byId.get("map")?.passed).toBe(true);

    // A cassette per case, holding every request the server answered for it (the judge's too).
    expect(readdirSync(cassettes).sort()).toEqual(SUITE.map((item) => `${item.id}.json`).sort());
    let entries = 0;
    for (const item of recorded.cases) {
      const cassette = JSON.parse(readFileSync(path.join(cassettes, `${item.id}.json`), "utf8")) as CassetteFile;
      expect(cassette).toMatchObject({ version: 1, case: item.id, task: item.task });
      expect(cassette.entries.length).toBe(item.metrics.llmCalls + (item.judge?.usage?.llmCalls ?? 0));
      expect(cassette.entries.every((entry) => /^[0-9a-f]{16}$/.test(entry.hash) && entry.model === "openai:gpt-4o-mini" && entry.reply !== undefined)).toBe(true);
      entries += cassette.entries.length;
    }
    expect(openai.requests.length).toBe(entries);
    expect(recorded.metrics.judge.llmCalls).toBe(2);

    // The server is gone and no key is set: every answer comes from the cassettes.
    await openai.close();
    const replayRun = await runCli(["eval", suite, "--provider", "openai:gpt-4o-mini", "--replay", cassettes, "--json", "--data-dir", path.join(directory, "replayed")], {
      cwd: directory,
      env: { OPENAI_BASE_URL: openai.baseUrl },
    });
    expect(replayRun.stderr).not.toMatch(/needs OPENAI_API_KEY/);
    expect(replayRun.code).toBe(1);
    const replayed = JSON.parse(replayRun.stdout) as EvalResults;
    expect(replayed).toMatchObject({ mode: "replay", passed: recorded.passed, passRate: recorded.passRate });
    expect(verdicts(replayed)).toEqual(verdicts(recorded));
    // Replayed runs are kept too, under new run ids.
    expect(replayed.cases.every((item, index) => item.runId !== null && item.runId !== recorded.cases[index]?.runId)).toBe(true);
  });

  it("fails a case clearly on a request the cassette does not hold, naming the case and the request hash", async () => {
    const openai = await fakeOpenAI();
    const directory = tempDir("troupe-eval-cassettes-");
    const suite = path.join(directory, "suite.jsonl");
    const cassettes = path.join(directory, "cassettes");
    writeSuite(suite, [{ id: "saves", task: "compute 17% of 2,340 and save it to result.txt" }]);
    const recordRun = await runCli(["eval", suite, "--provider", "openai", "--record", cassettes, "--data-dir", path.join(directory, "data")], { cwd: directory, env: envFor({ openai }) });
    expect(recordRun.code).toBe(0);
    await openai.close();

    // The same case asks something else now (its task changed), and a new case was never recorded.
    writeSuite(suite, [
      { id: "saves", task: "compute 18% of 2,340 and save it to result.txt" },
      { id: "unrecorded", task: "compute 6*7" },
    ]);
    const replayRun = await runCli(["eval", suite, "--provider", "openai", "--replay", cassettes, "--json", "--data-dir", path.join(directory, "data")], { cwd: directory, env: { OPENAI_BASE_URL: openai.baseUrl } });
    expect(replayRun.code).toBe(1);
    const replayed = JSON.parse(replayRun.stdout) as EvalResults;
    const saves = replayed.cases.find((item) => item.id === "saves");
    const miss = saves?.failures.find((failure) => failure.expectation === "replay");
    expect(miss?.message).toMatch(new RegExp(`^case saves: no recorded reply for request [0-9a-f]{16} \\(planner, openai:gpt-4\\.1-mini\\) in ${cassettes.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}/saves\\.json; the request differs from what was recorded`));
    expect(saves?.status).toBe("failed");
    expect(replayed.cases.find((item) => item.id === "unrecorded")).toMatchObject({
      passed: false,
      status: "error",
      runId: null,
      failures: [{ expectation: "replay", message: `case unrecorded: there is no cassette ${path.join(cassettes, "unrecorded.json")}; record the suite with --record first` }],
    });
    // The progress line says it as the case ends.
    expect(replayRun.stderr).toMatch(/✗ saves .*replay: case saves: no recorded reply for request [0-9a-f]{16}/);
  });

  it("replays the Anthropic client's forced-tool answers as well", async () => {
    const anthropic = await fakeAnthropic();
    const directory = tempDir("troupe-eval-cassettes-");
    const suite = path.join(directory, "suite.jsonl");
    const cassettes = path.join(directory, "cassettes");
    writeSuite(suite, [
      { id: "saves", task: "compute 17% of 2,340 and save it to result.txt", expect: { files: { "result.txt": "397.8" } } },
      { id: "fails-honestly", task: "write a poem about the sea", expect: { status: "failed" } },
    ]);
    const recordRun = await runCli(["eval", suite, "--provider", "anthropic", "--record", cassettes, "--json", "--data-dir", path.join(directory, "data")], { cwd: directory, env: envFor({ anthropic }) });
    expect(recordRun.code).toBe(0);
    await anthropic.close();
    const replayRun = await runCli(["eval", suite, "--provider", "anthropic", "--replay", cassettes, "--json", "--data-dir", path.join(directory, "data")], { cwd: directory, env: { ANTHROPIC_BASE_URL: anthropic.baseUrl } });
    expect(replayRun.code).toBe(0);
    expect(verdicts(JSON.parse(replayRun.stdout) as EvalResults)).toEqual(verdicts(JSON.parse(recordRun.stdout) as EvalResults));
  });
});
