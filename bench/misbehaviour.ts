/**
 * How troupe holds up against models that misbehave, and how much of its prompts a provider can
 * serve from cache. Each misbehaviour class (see src/testing/misbehaviour.ts) is played by the
 * fake OpenAI and Anthropic servers, streaming and not, planning on the compact plan wire and on
 * the JSON one, on a whole run of a task
 * through the real clients with the offline model as the servers' brain: a run holds when it
 * completes with the right file and answer, or fails saying why — never `completed` with a wrong
 * artifact. The extra model calls are counted against a clean run on the same wire. The cache
 * share is that of a fifteen-subtask run (ten direct calculations, five worker writes) on each wire, as the fakes' prompt caches report it:
 * OpenAI's automatic prefix cache (what a provider could serve from cache at all), Anthropic's
 * breakpoints as troupe marks them.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { TroupeConfig } from "../src/config/config-file.js";
import { parseEnv } from "../src/config/env.js";
import type { RunResult } from "../src/core/run.js";
import { OfflineChatModel } from "../src/providers/offline/offline-chat-model.js";
import { Troupe } from "../src/runtime/engine.js";
import { FakeAnthropicServer } from "../src/testing/fake-anthropic-server.js";
import { FakeOpenAIServer } from "../src/testing/fake-openai-server.js";
import type { FakeProviderServer } from "../src/testing/fake-server.js";
import { MISBEHAVIOURS, type Misbehaviour } from "../src/testing/misbehaviour.js";
import { withTempDir } from "./support.js";

// Tasks with worker steps: the offline planner runs a literal calculation or a write of one number
// as a direct step (no model call), and the misbehaviour of a worker's answer must be met somewhere.
const TASK = "compute 17% of 2,340 and 1% of 2,340, then save both to result.txt";
const EXPECTED_FILE = "397.8\n23.4";
const CACHE_TASK = [1, 3, 5, 7, 9].map((n) => `compute ${n}+${n} and ${n + 1}+${n + 1}, then save both to f${n}.txt`).join("; ");
const ROLES = ["planner", "execute", "critic", "synthesizer"];
/** Read as they come: every answer of the run misbehaves. The others misbehave once in each role. */
const EVERY_ANSWER: readonly Misbehaviour[] = ["fenced-json", "prose-json", "tool-as-text", "wrong-types", "duplicate-calls", "unknown-tool", "schema-filler", "fenced-text", "chatty-text"];
/** Zero extra calls is the target for these (read as they are); at most one per misbehaving answer for the rest. */
const READ_AS_IS: readonly Misbehaviour[] = ["fenced-json", "tool-as-text", "fenced-text", "chatty-text"];

type Wire = "openai" | "anthropic";
type PlanWire = "compact" | "json";
const WIRES: Array<{ wire: Wire; streaming: boolean; planWire: PlanWire }> = (["compact", "json"] as const).flatMap((planWire) => [
  { wire: "openai" as const, streaming: true, planWire },
  { wire: "openai" as const, streaming: false, planWire },
  { wire: "anthropic" as const, streaming: true, planWire },
  { wire: "anthropic" as const, streaming: false, planWire },
]);

export interface MisbehaviourClassFigures {
  misbehaviour: Misbehaviour;
  held: number;
  total: number;
  completed: number;
  /** Answers that misbehaved, over the class's runs. */
  misbehavingAnswers: number;
  /** Model calls beyond a clean run on the same wire, over the class's runs. */
  extraCalls: number;
  extraPerAnswer: number;
  /** Why a run that did not hold failed to. */
  broken: string[];
  met: boolean;
}

export interface CacheFigures {
  wire: Wire;
  calls: number;
  promptTokens: number;
  cachedPromptTokens: number;
  share: number;
  costUsd: number;
  /** The same run's cost had nothing been served from cache. */
  uncachedCostUsd: number;
}

export interface MisbehaviourReport {
  classes: MisbehaviourClassFigures[];
  cache: CacheFigures[];
  target: { heldRate: number; readAsIsExtra: number; maxExtraPerAnswer: number; minCacheShare: number; met: boolean };
}

interface Outcome {
  result: RunResult;
  server: FakeProviderServer;
  file: string | undefined;
}

async function runOn(wire: Wire, streaming: boolean, planWire: PlanWire, task: string, prepare: (server: FakeProviderServer) => void): Promise<Outcome> {
  const brain = new OfflineChatModel({});
  const server = await (wire === "openai" ? new FakeOpenAIServer(brain) : new FakeAnthropicServer(brain)).start();
  prepare(server);
  try {
    return await withTempDir("troupe-bench-misbehaviour-", async (directory) => {
      const workspace = path.join(directory, "workspace");
      mkdirSync(workspace, { recursive: true });
      const env =
        wire === "openai"
          ? { OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: server.baseUrl, TROUPE_PROVIDER: "openai:gpt-4o-mini" }
          : { ANTHROPIC_API_KEY: "sk-ant-fake", ANTHROPIC_BASE_URL: server.baseUrl, TROUPE_PROVIDER: "anthropic:claude-haiku-4-5" };
      const config: TroupeConfig = { providers: { [wire]: { streaming, planWire } } };
      const troupe = await Troupe.create({ env: parseEnv(env), config, callPolicy: { backoffBaseMs: 5, backoffMaxMs: 50 }, dataDir: path.join(directory, "data"), workspace });
      try {
        const result = await troupe.run({ task });
        const file = path.join(workspace, "result.txt");
        return { result, server, file: existsSync(file) ? readFileSync(file, "utf8") : undefined };
      } finally {
        troupe.close();
      }
    });
  } finally {
    await server.close();
  }
}

/** Why a run does not hold, or undefined when it does. */
function brokenBy({ result, file }: Outcome): string | undefined {
  if (result.status === "completed") {
    if (file !== EXPECTED_FILE) return `completed with result.txt ${file === undefined ? "missing" : `holding ${JSON.stringify(file)}`}`;
    if (!(result.answer ?? "").includes("397.8")) return "completed without 397.8 in the answer";
    return undefined;
  }
  if (result.status !== "failed") return `ended ${result.status}`;
  const reason = `${result.error ?? ""}${result.trace.knownIssues.join("")}`.trim();
  return reason === "" ? "failed without saying why" : undefined;
}

export async function measureMisbehaviour(): Promise<MisbehaviourReport> {
  const baseline = new Map<string, number>();
  for (const { wire, streaming, planWire } of WIRES) baseline.set(`${wire} ${streaming} ${planWire}`, (await runOn(wire, streaming, planWire, TASK, () => undefined)).result.metrics.llmCalls);
  const classes: MisbehaviourClassFigures[] = [];
  for (const misbehaviour of MISBEHAVIOURS) {
    const figures: MisbehaviourClassFigures = { misbehaviour, held: 0, total: 0, completed: 0, misbehavingAnswers: 0, extraCalls: 0, extraPerAnswer: 0, broken: [], met: false };
    for (const { wire, streaming, planWire } of WIRES) {
      const outcome = await runOn(wire, streaming, planWire, TASK, (server) => {
        if (EVERY_ANSWER.includes(misbehaviour)) server.inject({ kind: "misbehave", as: misbehaviour }, { times: 1_000 });
        else for (const role of misbehaviour === "refusal" ? ["execute"] : ROLES) server.inject({ kind: "misbehave", as: misbehaviour }, { role });
      });
      figures.total += 1;
      const broken = brokenBy(outcome);
      if (broken) figures.broken.push(`${wire}${streaming ? "" : " (not streaming)"}, ${planWire} plan: ${broken}`);
      else figures.held += 1;
      if (outcome.result.status === "completed") {
        figures.completed += 1;
        figures.extraCalls += Math.max(0, outcome.result.metrics.llmCalls - (baseline.get(`${wire} ${streaming} ${planWire}`) ?? 0));
      }
      figures.misbehavingAnswers += outcome.server.requests.filter((request) => request.fault === "misbehave").length;
    }
    // Extra calls are counted on the runs that completed (a run that fails honestly stops early, and its calls say nothing of the cost of reading).
    figures.extraPerAnswer = figures.misbehavingAnswers === 0 ? 0 : figures.extraCalls / figures.misbehavingAnswers;
    const maxExtra = READ_AS_IS.includes(misbehaviour) ? 0 : 1;
    figures.met = figures.held === figures.total && figures.extraPerAnswer <= maxExtra && (!READ_AS_IS.includes(misbehaviour) || figures.extraCalls === 0);
    classes.push(figures);
  }
  const cache: CacheFigures[] = [];
  for (const wire of ["openai", "anthropic"] as const) {
    const { result, server } = await runOn(wire, false, "compact", CACHE_TASK, (fake) => {
      fake.caching = wire === "openai" ? "automatic" : "breakpoints";
    });
    const read = server.requests.reduce((sum, request) => sum + (request.usage?.cacheRead ?? 0), 0);
    const input = server.requests.reduce((sum, request) => sum + (request.usage?.input ?? 0), 0);
    const price = wire === "openai" ? { input: 0.15, output: 0.6 } : { input: 1, output: 5 };
    cache.push({
      wire,
      calls: result.metrics.llmCalls,
      promptTokens: input,
      cachedPromptTokens: read,
      share: input === 0 ? 0 : read / input,
      costUsd: result.metrics.costUsd,
      uncachedCostUsd: (result.metrics.promptTokens * price.input + result.metrics.completionTokens * price.output) / 1_000_000,
    });
  }
  const target = { heldRate: 1, readAsIsExtra: 0, maxExtraPerAnswer: 1, minCacheShare: 0.6 };
  const met = classes.every((entry) => entry.met) && cache.every((entry) => entry.share >= target.minCacheShare);
  return { classes, cache, target: { ...target, met } };
}
