import { loadavg } from "node:os";
import path from "node:path";
import { findCriticalPath, longestPath } from "../src/core/critical-path.js";
import type { StoredEvent } from "../src/core/events.js";
import type { PlannedSubtask } from "../src/core/plan.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel, type ScriptStep } from "../src/testing/scripted-chat-model.js";
import { expectCompleted, SCRIPTED_USAGE } from "./scripts.js";
import { type Summary, summarize, withTempDir } from "./support.js";

/** Target of issue 12: the median shape's makespan is at most this multiple of its ideal critical path. */
export const CRITICAL_PATH_TARGET_RATIO = 1.05;

/** An uneven DAG and each subtask's scripted worker latency. */
interface Shape {
  name: string;
  plan: PlannedSubtask[];
  latency: Record<string, number>;
}

export interface ShapeFigures {
  name: string;
  subtasks: number;
  /** The longest path by the scripted latencies: the least the execution phase can take. */
  idealPath: string[];
  idealMs: number;
  /** First `subtask-start` → last `subtask-end`, by the events' `at`. */
  makespanMs: Summary;
  /** makespan ÷ ideal, per run. */
  ratio: Summary;
  /** The critical path by actual times (src/core/critical-path.ts) in the run of median ratio. */
  actualPath: string[];
}

export interface PlanStartFigures {
  subtasks: number;
  /** How long the scripted planner takes to write the whole plan. */
  planMs: number;
  /** Planner call start → first `subtask-start`, when the plan arrives whole at the end of the call. */
  afterWholePlanMs: Summary;
  /** The same with the plan's tool-call arguments streamed in pieces over the same time. */
  streamedMs: Summary;
  /** In how many pieces the streamed plan came. */
  pieces: number;
}

export interface CriticalPathReport {
  runs: number;
  shapes: ShapeFigures[];
  /** The median of the shapes' median ratios. */
  overallMedianRatio: number;
  /** 1-minute load average before and after the section (2 CPUs shared with other work). */
  load: { before: number; after: number };
  planStart: PlanStartFigures;
  target: { maxRatio: number; met: boolean };
}

/** A small seeded generator (mulberry32), so the random DAGs are the same on every machine. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Twenty subtasks, each depending on up to three earlier ones at random, with worker latencies of 20–200 ms. */
function randomShape(seed: number): Shape {
  const random = seeded(seed);
  const plan: PlannedSubtask[] = [];
  const latency: Record<string, number> = {};
  for (let index = 1; index <= 20; index += 1) {
    const id = `s${index}`;
    const earlier = plan.map((item) => item.id).filter(() => random() < 0.2);
    const dependsOn = earlier.slice(-3);
    plan.push(subtask(id, "research", `Random step ${index}`, { dependsOn }));
    latency[id] = 20 + Math.round(random() * 18) * 10;
  }
  return { name: `random DAG of 20 (seed ${seed})`, plan, latency };
}

function chainBesideLong(): Shape {
  return {
    name: "chain of four 100 ms beside one 400 ms",
    plan: [
      subtask("s1", "research", "Step one"),
      subtask("s2", "research", "Step two", { dependsOn: ["s1"] }),
      subtask("s3", "research", "Step three", { dependsOn: ["s2"] }),
      subtask("s4", "research", "Step four", { dependsOn: ["s3"] }),
      subtask("s5", "research", "The long one"),
    ],
    latency: { s1: 100, s2: 100, s3: 100, s4: 100, s5: 400 },
  };
}

function skewedDiamond(): Shape {
  return {
    name: "diamond, one branch 8× the other",
    plan: [
      subtask("s1", "research", "Start"),
      subtask("s2", "research", "Short branch", { dependsOn: ["s1"] }),
      subtask("s3", "research", "Long branch", { dependsOn: ["s1"] }),
      subtask("s4", "research", "Join", { dependsOn: ["s2", "s3"] }),
      subtask("s5", "research", "After the short branch", { dependsOn: ["s2"] }),
    ],
    latency: { s1: 50, s2: 50, s3: 400, s4: 50, s5: 150 },
  };
}

function doubleDiamond(): Shape {
  return {
    name: "two diamonds, skewed opposite ways",
    plan: [
      subtask("a", "research", "Start"),
      subtask("b", "research", "Long left", { dependsOn: ["a"] }),
      subtask("c", "research", "Short right", { dependsOn: ["a"] }),
      subtask("d", "research", "Middle", { dependsOn: ["b", "c"] }),
      subtask("e", "research", "Short left", { dependsOn: ["d"] }),
      subtask("f", "research", "Long right", { dependsOn: ["d"] }),
      subtask("g", "research", "End", { dependsOn: ["e", "f"] }),
    ],
    latency: { a: 50, b: 300, c: 50, d: 50, e: 50, f: 300, g: 50 },
  };
}

/** The scripted replies for `times` runs of a shape: each worker answers after its latency. */
function shapeScript(shape: Shape, times: number): ScriptStep[] {
  const extra = { times, usage: { ...SCRIPTED_USAGE } };
  return [
    planStep(shape.plan, extra),
    ...shape.plan.map((item) => finalStep(item.id, `result of ${item.id}`, { ...extra, delayMs: shape.latency[item.id] ?? 0 })),
    reviewStep(0.9, {}, extra),
    answerStep("Done.", extra),
  ];
}

async function createTroupe(directory: string, steps: ScriptStep[], streaming: boolean): Promise<{ troupe: Troupe; model: ScriptedChatModel }> {
  const model = new ScriptedChatModel({ steps, streaming });
  const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
  return { troupe, model };
}

/** First start and last end of the subtasks, and each subtask's times, from a run's events. */
function spansOf(events: StoredEvent[]): { makespanMs: number; times: Map<string, { startedAt: number; endedAt?: number }> } {
  const times = new Map<string, { startedAt: number; endedAt?: number }>();
  for (const event of events) {
    if (event.type === "subtask-start") times.set(event.subtaskId, { startedAt: event.at });
    if (event.type === "subtask-end") {
      const span = times.get(event.subtaskId);
      if (span) span.endedAt = event.at;
    }
  }
  const starts = [...times.values()].map((span) => span.startedAt);
  const ends = [...times.values()].map((span) => span.endedAt ?? Number.NaN);
  return { makespanMs: Math.max(...ends) - Math.min(...starts), times };
}

async function measureShape(shape: Shape, runs: number, warmupRuns: number): Promise<ShapeFigures> {
  const ideal = longestPath(shape.plan, (id) => shape.latency[id] ?? 0);
  return withTempDir("troupe-bench-critical-path-", async (directory) => {
    const { troupe, model } = await createTroupe(directory, shapeScript(shape, runs + warmupRuns), false);
    const measured: Array<{ makespanMs: number; ratio: number; actualPath: string[] }> = [];
    try {
      for (let round = 0; round < warmupRuns + runs; round += 1) {
        const events: StoredEvent[] = [];
        // Every subtask may run at once: the ideal path assumes no concurrency limit.
        const result = await troupe.run({ task: shape.name, concurrency: shape.plan.length }, { onEvent: (event) => events.push(event) });
        expectCompleted(result, model, `critical path (${shape.name})`);
        if (round < warmupRuns) continue;
        const { makespanMs, times } = spansOf(events);
        const actual = findCriticalPath(shape.plan.map((item) => ({ id: item.id, dependsOn: item.dependsOn, ...times.get(item.id) })));
        measured.push({ makespanMs, ratio: makespanMs / ideal.ms, actualPath: actual?.criticalPath ?? [] });
      }
    } finally {
      troupe.close();
    }
    const ratio = summarize(measured.map((run) => run.ratio));
    const median = measured.find((run) => run.ratio === ratio.median);
    return {
      name: shape.name,
      subtasks: shape.plan.length,
      idealPath: ideal.path,
      idealMs: ideal.ms,
      makespanMs: summarize(measured.map((run) => run.makespanMs)),
      ratio,
      actualPath: median?.actualPath ?? [],
    };
  });
}

/** Pieces a streamed plan's arguments come in. */
const PLAN_PIECES = 40;

/**
 * The planner's step streaming its plan's tool-call arguments in {@link PLAN_PIECES} pieces spread
 * over `planMs` (the scripted model's `streamPieces`, `pieceDelayMs`), so the whole plan takes as
 * long to write as the step that answers after `planMs` at once.
 */
function streamedPlanStep(step: ScriptStep, planMs: number): Partial<ScriptStep> {
  const characters = JSON.stringify(step.toolCalls?.[0]?.args ?? {}).length;
  return { streamPieces: Math.ceil(characters / PLAN_PIECES), pieceDelayMs: planMs / PLAN_PIECES };
}

/**
 * Planner call start → first `subtask-start`, for a plan of `subtasks` independent subtasks that
 * the scripted planner takes `planMs` to write; plan approval off.
 */
async function measurePlanStart(streamed: boolean, planMs: number, subtasks: number, runs: number): Promise<Summary> {
  const plan = Array.from({ length: subtasks }, (_, index) => subtask(`s${index + 1}`, "research", `Collect figure ${index + 1}`));
  const times = runs + 1;
  const extra = { times, usage: { ...SCRIPTED_USAGE } };
  const planning = planStep(plan, extra);
  const steps = [
    { ...planning, ...(streamed ? streamedPlanStep(planning, planMs) : { delayMs: planMs }) },
    ...plan.map((item) => finalStep(item.id, `result of ${item.id}`, extra)),
    reviewStep(0.9, {}, extra),
    answerStep("Done.", extra),
  ];
  return withTempDir("troupe-bench-plan-start-", async (directory) => {
    const { troupe, model } = await createTroupe(directory, steps, true);
    const waits: number[] = [];
    try {
      for (let round = 0; round < times; round += 1) {
        const firstCall = model.calls.length;
        let firstStart: number | undefined;
        const result = await troupe.run({ task: "Collect the figures" }, { onEvent: (event) => void (event.type === "subtask-start" && (firstStart ??= event.at)) });
        expectCompleted(result, model, "plan start");
        const planner = model.calls.slice(firstCall).find((call) => call.role === "planner");
        if (round > 0 && planner && firstStart !== undefined) waits.push(firstStart - planner.startedAt);
      }
    } finally {
      troupe.close();
    }
    return summarize(waits);
  });
}

/**
 * Issue 12's benchmark: for uneven DAGs on the scripted model (each worker call sleeps its
 * latency; the planner, critic and synthesizer answer at once), the execution phase's makespan
 * ÷ the ideal critical path, per shape and overall; and how soon the first subtask starts after
 * the planner is called.
 */
export async function measureCriticalPath(options: { runs: number; warmupRuns: number; planMs: number; planSubtasks: number }): Promise<CriticalPathReport> {
  const before = loadavg()[0] ?? 0;
  const shapes: ShapeFigures[] = [];
  for (const shape of [chainBesideLong(), skewedDiamond(), doubleDiamond(), randomShape(1), randomShape(2), randomShape(3)]) {
    shapes.push(await measureShape(shape, options.runs, options.warmupRuns));
  }
  const overallMedianRatio = summarize(shapes.map((shape) => shape.ratio.median)).median;
  const afterWholePlanMs = await measurePlanStart(false, options.planMs, options.planSubtasks, options.runs);
  const streamedMs = await measurePlanStart(true, options.planMs, options.planSubtasks, options.runs);
  return {
    runs: options.runs,
    shapes,
    overallMedianRatio,
    load: { before, after: loadavg()[0] ?? 0 },
    planStart: {
      subtasks: options.planSubtasks,
      planMs: options.planMs,
      afterWholePlanMs,
      streamedMs,
      pieces: PLAN_PIECES,
    },
    target: { maxRatio: CRITICAL_PATH_TARGET_RATIO, met: overallMedianRatio <= CRITICAL_PATH_TARGET_RATIO },
  };
}
