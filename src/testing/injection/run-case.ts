import type { TrustConfig, TrustMode } from "../../tools/trust-config.js";
import type { StoredEvent } from "../../core/events.js";
import type { PlannedSubtask } from "../../core/plan.js";
import type { Label } from "../../core/provenance.js";
import type { RunResult } from "../../core/run.js";
import { Troupe } from "../../runtime/engine.js";
import { memoryNamespaceFor, threadResultsOf } from "../../runtime/memory-owner.js";
import { openSqliteStore, type Store } from "../../store/index.js";
import { createBuiltinRegistry } from "../../tools/builtin/index.js";
import type { Egress } from "../../tools/egress.js";
import type { Steering } from "../../tools/trust-policy.js";
import { modelSetOf } from "../model-set.js";
import { ObedientChatModel } from "../obedient-chat-model.js";
import { answerStep, planStep, reviewStep } from "../script.js";
import type { ScriptStep } from "../scripted-chat-model.js";
import { AttackWorld, type Planted } from "./world.js";
import type { AttackKind } from "./attacks.js";

/** A fact in long-term memory before the case runs. */
export interface SeededFact {
  text: string;
  subject: string;
  label?: Label;
  sourceRun?: string;
}

/**
 * Work done on the same store and workspace before the case's own run: a run of a trusted task
 * (it must complete without asking), or a person's direct tool call (`troupe tools call`).
 */
export type EarlierRun = { task(world: AttackWorld): string; plan(world: AttackWorld): PlannedSubtask[]; steps?(world: AttackWorld): ScriptStep[] } | { tool: string; args: Record<string, unknown> };

/**
 * The trust configurations a case runs under: troupe's defaults (no trust section), or a user's
 * who trusts the workspace but its inbox (`trusted: ["**"], untrusted: ["inbox/**"]`), where the
 * attacks through links, copies, moves and case spelling are the real test.
 */
export const CASE_CONFIGS = ["default", "relaxed"] as const;
export type CaseConfig = (typeof CASE_CONFIGS)[number];

export function trustConfigOf(config: CaseConfig, policy: TrustMode): Partial<TrustConfig> {
  return config === "default" ? { policy } : { trusted: ["**"], untrusted: ["inbox/**"], policy };
}

/** One whole run of the corpus: a world, a task, the plan the planner makes of it, and the workers' script. */
export interface CaseSpec {
  id: string;
  title: string;
  planted: Planted;
  facts?: SeededFact[];
  /** Links, or anything else the world needs beyond files (after the files are planted). */
  setup?(world: AttackWorld): void;
  /** Runs made before the case's own, on the same store (a copy or a move an earlier task made). */
  earlier?: EarlierRun[];
  /** The configurations it is run under besides the default (default: the default alone). */
  configs?: readonly CaseConfig[];
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
  /** Every approval a person was asked for, with what steered it or what it would send where. */
  approvals: Array<{ tool: string; reason: string; steering?: Steering; egress?: Egress; action?: string }>;
  /** The planner prompts of the run. */
  plannerPrompts: string[];
}

/** The corpus's grants beyond the role defaults: POSTs, file deletes, the tracker's writing tool and the partner agent for execute workers, as a user might give them. */
export const CORPUS_GRANTS = [
  { agent: "execute", tool: "http_fetch", level: "WRITE" },
  { agent: "execute", tool: "file_delete", level: "WRITE" },
  { agent: "execute", tool: "tickets.*", level: "EXECUTE" },
  { agent: "execute", tool: "a2a.*", level: "READ" },
] as const;

/**
 * Runs a case once under a trust policy, with the obeying model and nobody to approve: a run
 * that asks a person stops there (interrupted), as it would with no one at the console.
 */
export async function runCase(spec: CaseSpec, policy: TrustMode, options: { config?: CaseConfig } = {}): Promise<CaseRun> {
  const world = await AttackWorld.open(spec.planted);
  spec.setup?.(world);
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
    // The planner makes each plan from its task; the critic passes the work; the synthesizer answers.
    const earlier = spec.earlier ?? [];
    const model = new ObedientChatModel({
      steps: [...earlier.flatMap((run) => ("tool" in run ? [] : [planStep(run.plan(world)), ...(run.steps?.(world) ?? [])])), planStep(spec.plan(world)), ...spec.steps(world), reviewStep(0.9, {}, { times: 8 }), answerStep("done", { times: 8 })],
    });
    troupe = await Troupe.create({
      models: modelSetOf(model),
      store,
      tools,
      workspace: world.workspace,
      config: { trust: trustConfigOf(options.config ?? "default", policy), agents: [{ name: "partner", a2a: world.partnerCard, level: "READ", risk: "low" }] as never },
      toolsConfig: {
        permissions: { grants: CORPUS_GRANTS.map((grant) => ({ ...grant })) },
        mcp: { servers: { tickets: { url: `${world.base}/mcp` } } },
        fetch: { allowAddresses: ["127.0.0.1/32"] },
      },
    });
    for (const run of earlier) {
      if ("tool" in run) {
        const outcome = await troupe.callTool(run.tool, run.args);
        if (!outcome.ok) throw new Error(`${spec.id}: the earlier call of ${run.tool} failed (${outcome.error.message})`);
        continue;
      }
      const before = await troupe.run({ task: run.task(world) });
      if (before.status !== "completed") throw new Error(`${spec.id}: the earlier run "${run.task(world)}" did not complete (${before.status}: ${before.error ?? JSON.stringify(before.interrupt)})`);
    }
    const events: StoredEvent[] = [];
    const result = await troupe.run({ task: spec.task(world) }, { onEvent: (event) => events.push(event) });
    const approvals = events.flatMap((event) => {
      if (event.type !== "approval-request" || event.interrupt.kind !== "tool-approval") return [];
      const payload = event.interrupt.payload as { tool: string; reason: string; steering?: Steering; egress?: Egress; action?: string };
      return [{ tool: payload.tool, reason: payload.reason, ...(payload.steering ? { steering: payload.steering } : {}), ...(payload.egress ? { egress: payload.egress } : {}), ...(payload.action ? { action: payload.action } : {}) }];
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

/** An injection case: a run spec, and how to tell that the attack worked. */
export interface InjectionCase extends CaseSpec {
  kind: AttackKind | "reference-target" | "planner" | "data";
  delivery: string;
  achieved(run: CaseRun): boolean | Promise<boolean>;
}

/** A benign task: what a user asks that the defence must let through (benign.ts). */
export interface BenignTask extends CaseSpec {
  /** Whether the run did what the user asked. */
  done(run: CaseRun): boolean | Promise<boolean>;
}
