import { FRAMEWORKS, type Framework, TROUPE_WORKERS } from "./frameworks.js";
import { BENCH_MODEL_LATENCY, HOSTED_MODEL_LATENCY, type ModelLatency } from "./meter.js";
import { runTask, type TaskRun } from "./run-task.js";
import { GROUPS, type Group, PEER_TASKS, type PeerTask } from "./tasks.js";
import { BENCH_LATENCIES, type ToolLatencies } from "./world.js";

/**
 * `npm run bench -- --only peers`: the same tasks through troupe and its peers (a LangGraph
 * supervisor, the OpenAI Agents SDK with handoffs and with agents as tools, a single ReAct agent),
 * one oracle model deciding the same way behind each framework's model interface, the same tools
 * and latencies. Per task and framework: makespan, model calls, prompt and completion tokens
 * (one tokenizer over what each sent) and whether the answer is right; per group, troupe ÷ the
 * best peer against the targets. Figures are reported, never enforced.
 */

export const METRICS = ["makespanMs", "modelCalls", "promptTokens", "completionTokens"] as const;
export type Metric = (typeof METRICS)[number];

/** A framework's figures on one group: sums over its tasks (makespan: of each task's median). */
export interface GroupFigures {
  framework: string;
  group: Group;
  tasks: number;
  correct: number;
  makespanMs: number;
  modelCalls: number;
  promptTokens: number;
  completionTokens: number;
  /** troupe's rows only: calls and prompt tokens by role. */
  byRole?: TaskRun["byRole"];
  /** troupe's rows only: the planner's completion tokens per step of the plans (the steps the tasks' solutions have). */
  planTokensPerStep?: number;
}

/** troupe ÷ the best peer (the lowest figure among the peers that answered every task of the group right). */
export interface Ratio {
  group: Group;
  metric: Metric;
  troupe: number;
  bestPeer: string | null;
  best: number;
  ratio: number;
  /** The target for this group and metric, when it sets one. */
  target?: number;
  met?: boolean;
}

export interface PeersReport {
  /** The model latency profile: `bench` (a tenth of a hosted model's times) or `hosted`. */
  profile: "bench" | "hosted";
  encoding: string;
  modelLatency: ModelLatency;
  toolLatencies: ToolLatencies;
  repeats: number;
  frameworks: string[];
  /** One per task and framework: the median makespan of the repeats, the rest from the first (they do not vary). */
  runs: TaskRun[];
  groups: GroupFigures[];
  ratios: Ratio[];
  /** Simple tasks: troupe's model calls against the ReAct agent's + 1, per task. */
  simpleCalls: Array<{ task: string; troupe: number; react: number; met: boolean }>;
  target: { met: boolean; missed: string[] };
  /** The same tasks with the hosted latency profile, when it was run too (its targets are in `target` as well). */
  hosted?: PeersReport;
}

/** The targets on troupe ÷ best peer. */
export const TARGETS: ReadonlyArray<{ group: Group; metric: Metric; max: number }> = [
  { group: "simple", metric: "makespanMs", max: 1 },
  { group: "parallel", metric: "makespanMs", max: 0.6 },
  { group: "map", metric: "makespanMs", max: 0.5 },
  { group: "chain", metric: "makespanMs", max: 0.6 },
  { group: "simple", metric: "completionTokens", max: 1 },
  { group: "parallel", metric: "completionTokens", max: 1 },
  { group: "map", metric: "completionTokens", max: 1 },
  { group: "chain", metric: "completionTokens", max: 1 },
  { group: "simple", metric: "promptTokens", max: 1 },
  { group: "parallel", metric: "promptTokens", max: 0.6 },
  { group: "map", metric: "promptTokens", max: 1 },
  { group: "chain", metric: "promptTokens", max: 0.6 },
];

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

export interface PeersOptions {
  repeats: number;
  tasks?: readonly PeerTask[];
  frameworks?: readonly Framework[];
  latencies?: ToolLatencies;
  modelLatency?: ModelLatency;
  log?: (line: string) => void;
  /** Also run the tasks with the hosted latency profile, this many times each. */
  hosted?: { repeats: number };
}

function groupFigures(runs: readonly TaskRun[], framework: string, group: Group, troupe: boolean): GroupFigures {
  const mine = runs.filter((run) => run.framework === framework && run.group === group);
  const sum = (metric: Metric) => mine.reduce((total, run) => total + run[metric], 0);
  const figures: GroupFigures = { framework, group, tasks: mine.length, correct: mine.filter((run) => run.correct).length, makespanMs: sum("makespanMs"), modelCalls: sum("modelCalls"), promptTokens: sum("promptTokens"), completionTokens: sum("completionTokens") };
  if (troupe) {
    const roles: TaskRun["byRole"] = {};
    for (const run of mine) {
      for (const [role, entry] of Object.entries(run.byRole)) {
        const total = (roles[role] ??= { calls: 0, promptTokens: 0, completionTokens: 0 });
        total.calls += entry.calls;
        total.promptTokens += entry.promptTokens;
        total.completionTokens += entry.completionTokens;
      }
    }
    figures.byRole = roles;
    const steps = mine.reduce((total, run) => total + (PEER_TASKS.find((task) => task.id === run.task)?.steps.length ?? 0), 0);
    if (steps > 0 && roles.planner) figures.planTokensPerStep = roles.planner.completionTokens / steps;
  }
  return figures;
}

export async function measurePeers(options: PeersOptions): Promise<PeersReport> {
  const report = await measureProfile(options, "bench");
  if (!options.hosted) return report;
  options.log?.("  the hosted latency profile…");
  const hosted = await measureProfile({ ...options, repeats: options.hosted.repeats, modelLatency: HOSTED_MODEL_LATENCY }, "hosted");
  const missed = [...report.target.missed, ...hosted.target.missed.map((line) => `hosted: ${line}`)];
  return { ...report, hosted, target: { met: missed.length === 0, missed } };
}

async function measureProfile(options: PeersOptions, profile: PeersReport["profile"]): Promise<PeersReport> {
  const tasks = options.tasks ?? PEER_TASKS;
  const frameworks = options.frameworks ?? [...FRAMEWORKS, TROUPE_WORKERS];
  const latencies = options.latencies ?? BENCH_LATENCIES;
  const modelLatency = options.modelLatency ?? BENCH_MODEL_LATENCY;
  const samples = new Map<string, TaskRun[]>();
  // Interleaved (each repeat runs every task through every framework in turn), so a busy moment of the machine is shared out.
  for (let repeat = 0; repeat < options.repeats; repeat += 1) {
    for (const task of tasks) {
      for (const framework of frameworks) {
        const run = await runTask(framework, task, { latencies, modelLatency });
        const key = `${framework.name}\u0000${task.id}`;
        samples.set(key, [...(samples.get(key) ?? []), run]);
        if (!run.correct) options.log?.(`  ${framework.name} on ${task.id}: ${run.problem}`);
      }
    }
    options.log?.(`  repeat ${repeat + 1} of ${options.repeats} done`);
  }
  const runs = [...samples.values()].map((repeats) => ({ ...(repeats[0] as TaskRun), makespanMs: median(repeats.map((run) => run.makespanMs)), correct: repeats.every((run) => run.correct) }));
  const names = frameworks.map((framework) => framework.name);
  const groups = GROUPS.flatMap((group) => frameworks.map((framework) => groupFigures(runs, framework.name, group, framework.troupe))).filter((figures) => figures.tasks > 0);
  const peers = frameworks.filter((framework) => !framework.troupe).map((framework) => framework.name);
  const ratios: Ratio[] = [];
  for (const group of GROUPS) {
    const troupe = groups.find((figures) => figures.framework === "troupe" && figures.group === group);
    if (!troupe) continue;
    const eligible = groups.filter((figures) => figures.group === group && peers.includes(figures.framework) && figures.correct === figures.tasks);
    for (const metric of METRICS) {
      const best = eligible.reduce<GroupFigures | undefined>((lowest, figures) => (lowest === undefined || figures[metric] < lowest[metric] ? figures : lowest), undefined);
      const ratio = best ? troupe[metric] / best[metric] : Number.NaN;
      const target = TARGETS.find((candidate) => candidate.group === group && candidate.metric === metric);
      ratios.push({ group, metric, troupe: troupe[metric], bestPeer: best?.framework ?? null, best: best?.[metric] ?? Number.NaN, ratio, ...(target ? { target: target.max, met: ratio <= target.max } : {}) });
    }
  }
  const simpleCalls = tasks
    .filter((task) => task.group === "simple")
    .flatMap((task) => {
      const troupe = runs.find((run) => run.framework === "troupe" && run.task === task.id);
      const react = runs.find((run) => run.framework === "react-agent" && run.task === task.id);
      return troupe && react ? [{ task: task.id, troupe: troupe.modelCalls, react: react.modelCalls, met: troupe.modelCalls <= react.modelCalls + 1 }] : [];
    });
  const missed = [
    ...ratios.filter((ratio) => ratio.met === false).map((ratio) => `${ratio.group} ${ratio.metric} ${ratio.ratio.toFixed(2)}× (target ≤ ${ratio.target}×)`),
    ...simpleCalls.filter((row) => !row.met).map((row) => `${row.task}: ${row.troupe} model calls against the ReAct agent's ${row.react} + 1`),
    ...runs.filter((run) => !run.correct && names.includes(run.framework)).map((run) => `${run.framework} answered ${run.task} wrong`),
  ];
  return {
    profile,
    encoding: "cl100k_base (gpt-tokenizer)",
    modelLatency,
    toolLatencies: latencies,
    repeats: options.repeats,
    frameworks: names,
    runs,
    groups,
    ratios,
    simpleCalls,
    target: { met: missed.length === 0, missed },
  };
}
