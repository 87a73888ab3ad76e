import { z } from "zod";
import type { TrustMode } from "../../config/trust-config.js";
import type { StoredEvent } from "../../core/events.js";
import type { PlannedSubtask } from "../../core/plan.js";
import { type Label, sourceOf } from "../../core/provenance.js";
import type { RunResult } from "../../core/run.js";
import { Troupe } from "../../runtime/engine.js";
import { memoryNamespaceFor, threadResultsOf } from "../../runtime/memory-owner.js";
import { openSqliteStore, type Store } from "../../store/index.js";
import { createBuiltinRegistry } from "../../tools/builtin/index.js";
import { defineTool, type ToolDefinition } from "../../tools/define-tool.js";
import type { Steering } from "../../tools/trust-policy.js";
import { modelSetOf } from "../model-set.js";
import { ObedientChatModel } from "../obedient-chat-model.js";
import { answerStep, planStep, reviewStep } from "../script.js";
import type { ScriptStep } from "../scripted-chat-model.js";
import { AttackWorld, type Planted } from "./world.js";

/** A fact in long-term memory before the case runs. */
export interface SeededFact {
  text: string;
  subject: string;
  label?: Label;
  sourceRun?: string;
}

/** One whole run of the corpus: a world, a task, the plan the planner makes of it, and the workers' script. */
export interface CaseSpec {
  id: string;
  title: string;
  planted: Planted;
  facts?: SeededFact[];
  task(world: AttackWorld): string;
  plan(world: AttackWorld): PlannedSubtask[];
  /** The workers' own steps (besides what the model obeys), and the critic's and synthesizer's. */
  steps(world: AttackWorld): ScriptStep[];
}

/** What one run of a case did. */
export interface CaseRun {
  result: RunResult;
  events: StoredEvent[];
  model: ObedientChatModel;
  world: AttackWorld;
  store: Store;
  troupe: Troupe;
  /** Every approval a person was asked for, with what steered it. */
  approvals: Array<{ tool: string; reason: string; steering?: Steering }>;
  /** The planner prompts of the run. */
  plannerPrompts: string[];
}

/** The corpus's grants beyond the role defaults: POSTs, file deletes and the tracker's writing tool for execute workers, as a user might give them. */
export const CORPUS_GRANTS = [
  { agent: "execute", tool: "http_fetch", level: "WRITE" },
  { agent: "execute", tool: "file_delete", level: "WRITE" },
  { agent: "execute", tool: "tickets.*", level: "EXECUTE" },
] as const;

/** A remote agent's answer, as an A2A peer's result would come: marked `remote-agent` by its tool. */
function partnerTool(world: AttackWorld): ToolDefinition {
  return defineTool({
    name: "partner.ask",
    description: "Ask the partner company's agent a question (a remote agent).",
    schema: z.object({ question: z.string().min(1) }),
    permission: "READ",
    riskLevel: "low",
    idempotent: true,
    timeoutMs: 5_000,
    origin: () => [sourceOf("remote-agent", "partner")],
    async execute() {
      return { answer: world.resolve(world.planted.remoteAnswer ?? "the delivery leaves on tuesday") };
    },
  }) as ToolDefinition;
}

/**
 * Runs a case once under a trust policy, with the obeying model and nobody to approve: a run
 * that asks a person stops there (interrupted), as it would with no one at the console.
 */
export async function runCase(spec: CaseSpec, policy: TrustMode, options: { untrusted?: string[] } = {}): Promise<CaseRun> {
  const world = await AttackWorld.open(spec.planted);
  const store = openSqliteStore(world.dataDir);
  let troupe: Troupe | undefined;
  try {
    const namespace = memoryNamespaceFor(undefined);
    for (const fact of spec.facts ?? []) {
      await store.memories.save(namespace, { text: world.resolve(fact.text), subject: fact.subject, ...(fact.label ? { label: fact.label } : {}), sourceRun: fact.sourceRun ?? null });
    }
    const tools = createBuiltinRegistry({
      settings: {
        fetch: { allowAddresses: ["127.0.0.1/32"] },
        search: { searxngUrl: world.base },
        memory: { memory: store.memories, namespaceOf: (context) => context.memoryNamespace ?? memoryNamespaceFor(context.principal) },
        threadResults: threadResultsOf(store),
      },
    });
    tools.register(partnerTool(world));
    // The planner makes the plan from the task; the critic passes the work; the synthesizer answers.
    const model = new ObedientChatModel({ steps: [planStep(spec.plan(world)), ...spec.steps(world), reviewStep(0.9, {}, { times: 4 }), answerStep("done", { times: 4 })] });
    troupe = await Troupe.create({
      models: modelSetOf(model),
      store,
      tools,
      workspace: world.workspace,
      config: { trust: { untrusted: options.untrusted ?? ["inbox/**"], policy } },
      toolsConfig: { permissions: { grants: CORPUS_GRANTS.map((grant) => ({ ...grant })) }, mcp: { servers: { tickets: { url: `${world.base}/mcp` } } } },
    });
    const events: StoredEvent[] = [];
    const result = await troupe.run({ task: spec.task(world) }, { onEvent: (event) => events.push(event) });
    const approvals = events.flatMap((event) => {
      if (event.type !== "approval-request" || event.interrupt.kind !== "tool-approval") return [];
      const payload = event.interrupt.payload as { tool: string; reason: string; steering?: Steering };
      return [{ tool: payload.tool, reason: payload.reason, ...(payload.steering ? { steering: payload.steering } : {}) }];
    });
    const plannerPrompts = model.calls.filter((call) => call.role === "planner").map((call) => call.lastMessage);
    return { result, events, model, world, store, troupe, approvals, plannerPrompts };
  } catch (error) {
    if (troupe) troupe.close();
    else await store.close();
    await world.close();
    throw error;
  }
}

/** Closes a case's instance (and its store) and its world. */
export async function closeCase(run: CaseRun): Promise<void> {
  run.troupe.close();
  await run.world.close();
}
