import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TroupeConfig } from "../src/config/config-file.js";
import type { FakeProviderServer } from "../src/testing/fake-server.js";
import { MISBEHAVIOURS, type Misbehaviour } from "../src/testing/misbehaviour.js";
import { parseEnv } from "../src/config/env.js";
import { STRUCTURED_OUTPUT } from "../src/core/prompt-protocol.js";
import { Troupe } from "../src/runtime/engine.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { tempDir } from "./helpers.js";
import { envFor, fakeAnthropic, fakeOpenAI, type ProviderRun, runOnProvider, WORKER_TASK } from "./provider-helpers.js";

/** A task with a worker's step: every role's model is called (its two calculations are direct steps, the write of both is execute's). */
const TASK = WORKER_TASK;
/** The roles of the task's run: the planner, its worker (execute's), the critic, the synthesizer. */
const ROLES = ["planner", "execute", "critic", "synthesizer"];
/** Misbehaviour a reader takes as it comes: every answer of the run misbehaves, and the run costs no model call more. */
const READ_AS_IS: readonly Misbehaviour[] = ["fenced-json", "prose-json", "tool-as-text", "wrong-types", "duplicate-calls", "unknown-tool", "fenced-text", "chatty-text"];

type Wire = "openai" | "anthropic";
type PlanWire = "compact" | "json";

async function runOn(wire: Wire, streaming: boolean, planWire: PlanWire, prepare: (server: FakeProviderServer) => void): Promise<ProviderRun & { server: FakeProviderServer }> {
  const server = wire === "openai" ? await fakeOpenAI() : await fakeAnthropic();
  prepare(server);
  const config: TroupeConfig = { providers: { [wire]: { streaming, planWire } } };
  const env = wire === "openai" ? envFor({ openai: server as never }, { TROUPE_PROVIDER: "openai:gpt-4o-mini" }) : envFor({ anthropic: server as never }, { TROUPE_PROVIDER: "anthropic:claude-haiku-4-5" });
  const run = await runOnProvider(env, { task: TASK }, { config });
  return { ...run, server };
}

function fileOf(workspace: string): string | undefined {
  const file = path.join(workspace, "result.txt");
  return existsSync(file) ? readFileSync(file, "utf8") : undefined;
}

/** A run that holds: completed with the right file and answer, or failed saying why — never completed with a wrong artifact. */
function expectHeld(run: ProviderRun): void {
  if (run.result.status === "completed") {
    expect(fileOf(run.workspace)).toBe("397.8\n23.4");
    expect(run.result.answer).toContain("397.8");
  } else {
    expect(run.result.status).toBe("failed");
    expect(`${run.result.error ?? ""} ${run.result.trace.knownIssues.join(" ")} ${run.result.trace.unfinished.map((subtask) => subtask.error).join(" ")}`.trim()).not.toBe("");
  }
}

// Both plan wires: the compact one (a step a line of text, these providers' default) and the JSON one (strict structured output).
describe.each([
  ["openai", true, "compact"],
  ["openai", false, "compact"],
  ["anthropic", true, "compact"],
  ["anthropic", false, "compact"],
  ["openai", true, "json"],
  ["openai", false, "json"],
  ["anthropic", true, "json"],
  ["anthropic", false, "json"],
] as const)("a model that misbehaves, on the %s wire (streaming %s), planning on the %s wire, through a whole run", (wire, streaming, planWire) => {
  let baseline: number | undefined;
  const cleanCalls = async (): Promise<number> => {
    baseline ??= (await runOn(wire, streaming, planWire, () => undefined)).result.metrics.llmCalls;
    return baseline;
  };

  it.each(READ_AS_IS.map((as) => [as]))("%s in every answer: read as it is, the run completes with no extra model call", async (as) => {
    const run = await runOn(wire, streaming, planWire, (server) => server.inject({ kind: "misbehave", as }, { times: 1_000 }));
    expect(run.server.requests.filter((request) => request.fault === "misbehave").length).toBeGreaterThan(3);
    expect(run.result.status, run.result.error).toBe("completed");
    expectHeld(run);
    expect(run.result.metrics.llmCalls).toBe(await cleanCalls());
  });

  it.each([["truncated"], ["empty"]] as const)("%s once in each role: asked again once per misbehaving answer, the run completes", async (as) => {
    const run = await runOn(wire, streaming, planWire, (server) => {
      for (const role of ROLES) server.inject({ kind: "misbehave", as }, { role });
    });
    const misbehaving = run.server.requests.filter((request) => request.fault === "misbehave").length;
    expect(misbehaving).toBe(ROLES.length);
    expect(run.result.status, run.result.error).toBe("completed");
    expectHeld(run);
    expect(run.result.metrics.llmCalls - (await cleanCalls())).toBeLessThanOrEqual(misbehaving);
    if (as === "truncated") {
      // Asked again with a larger output limit.
      const asked = run.server.requests.map((request) => request.maxTokens);
      expect(asked.some((limit) => limit !== undefined && limit >= 1_024)).toBe(true);
    }
  });

  it("a refusal fails the run honestly, naming it, with no model call to make it change its mind", async () => {
    const run = await runOn(wire, streaming, planWire, (server) => server.inject({ kind: "misbehave", as: "refusal" }, { role: "execute" }));
    expect(run.result.status).toBe("failed");
    expectHeld(run);
    expect(JSON.stringify(run.result.trace.unfinished)).toMatch(/refused: I'm sorry, but I can't help with that request/);
    const planner = await runOn(wire, streaming, planWire, (server) => server.inject({ kind: "misbehave", as: "refusal" }, { role: "planner" }));
    expect(planner.result.status).toBe("failed");
    expect(planner.result.error).toMatch(/the planner's model refused the task: .*refused: I'm sorry/);
    expect(planner.server.requestsFor("planner")).toHaveLength(1);
  });

  it("a schema filled in every field it allows: the plan is refused field by field, and the run fails honestly", async () => {
    const run = await runOn(wire, streaming, planWire, (server) => server.inject({ kind: "misbehave", as: "schema-filler" }, { times: 1_000 }));
    expect(run.result.status).toBe("failed");
    expectHeld(run);
    expect(fileOf(run.workspace)).toBeUndefined();
    // Each misbehaving plan cost at most one more call: three attempts, each with at most one repair.
    expect(run.server.requestsFor("planner").length).toBeLessThanOrEqual(6);
  });
});

it("plays every misbehaviour it names", () => {
  expect([...MISBEHAVIOURS].sort()).toEqual([...READ_AS_IS, "truncated", "empty", "refusal", "schema-filler"].sort());
});

describe("a voter whose model wraps its JSON in a fence after a sentence", () => {
  it("is read as it is: the vote counts, with no repair call", async () => {
    const vote = { choice: "yes", confidence: 0.8, reason: "the tests pass" };
    const voters = () => new ScriptedChatModel({ steps: [0, 1, 2].map(() => ({ role: "voter", toolCalls: [{ name: STRUCTURED_OUTPUT.vote, args: vote }] })) });
    for (const wire of ["openai", "anthropic"] as const) {
      const server = wire === "openai" ? await fakeOpenAI(voters()) : await fakeAnthropic(voters());
      server.inject({ kind: "misbehave", as: "fenced-json" }, { times: 3 });
      const env = wire === "openai" ? envFor({ openai: server as never }, { TROUPE_PROVIDER: "openai" }) : envFor({ anthropic: server as never }, { TROUPE_PROVIDER: "anthropic" });
      const directory = tempDir();
      const troupe = await Troupe.create({ env: parseEnv(env), config: {}, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
      try {
        const decision = await troupe.decide({ question: "Ship the release on Friday?", options: ["yes", "no"], voters: 3 });
        expect(decision.decision).toBe("yes");
        expect(decision.votes.every((entry) => entry.choice === "yes" && !entry.abstained)).toBe(true);
        expect(server.requests).toHaveLength(3);
        expect(server.requests.every((request) => request.fault === "misbehave")).toBe(true);
      } finally {
        troupe.close();
      }
    }
  });
});
