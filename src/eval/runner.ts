import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import pMap from "p-map";
import { ensureDirectory } from "../core/user-files.js";
import { errorMessage } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import { emptyMetrics, type RunResult } from "../core/run.js";
import { MODEL_ROLES } from "../providers/provider.js";
import { choiceId } from "../providers/registry.js";
import type { Troupe } from "../runtime/engine.js";
import type { EvalStatus } from "../store/index.js";
import { checkRelativePath } from "../tools/workspace.js";
import { type CassetteFile, cassettePath, CASSETTE_VERSION, writeCassette } from "./cassette.js";
import { CaseCassette, cassetteModelSet } from "./cassette-model.js";
import { caseSummary, type EvalEvent } from "./events.js";
import { checkExpectations, judgeFailure } from "./expectations.js";
import { judgeAnswer } from "./judge.js";
import { type CaseResult, type EvalResults, type Failure, type JudgeOutcome, sumMetrics } from "./results.js";
import type { EvalCase, Suite } from "./suite.js";
import { threadNameOf } from "../core/thread-key.js";

export interface CassetteOptions {
  mode: "record" | "replay";
  directory: string;
  /** For replay: each case's cassette, read (and checked) before the eval starts; undefined when a case has none. */
  recorded?: ReadonlyMap<string, CassetteFile | undefined>;
}

export interface EvalRunOptions {
  /** The engine whose store, tools and models the cases use; each case runs in its own workspace beside it. */
  troupe: Troupe;
  suite: Suite;
  /** Default: a new `eval-<uuid>`. A row for it is made in the evals table unless one exists (the server makes it when it accepts the suite). */
  evalId?: string;
  /** Cases run at once (default 4). */
  concurrency?: number;
  /** The pass rate the eval must reach, 0–1 (default 1: every case). */
  minPassRate?: number;
  cassettes?: CassetteOptions;
  /** The API principal the cases' runs belong to (so its task pages open them). */
  owner?: string;
  signal?: AbortSignal;
  onEvent?: (event: EvalEvent) => void;
}

/** A new eval id. */
export function newEvalId(): string {
  return `eval-${randomUUID()}`;
}

/** The folder an eval's case workspaces are made in: beside the runs, in the data directory. */
export function evalDirectory(troupe: Troupe, evalId: string): string {
  return path.join(troupe.store.directory, "evals", evalId);
}

/** Makes the case's fresh workspace with the files it starts from. */
async function seedWorkspace(workspace: string, files: Record<string, string>): Promise<void> {
  await ensureDirectory(workspace);
  for (const [name, text] of Object.entries(files)) {
    const target = path.join(workspace, ...checkRelativePath(name));
    await ensureDirectory(path.dirname(target));
    await writeFile(target, text);
  }
}

/** A failure per request the cassette did not hold (once per request, however often it was asked). */
function missFailure(evalCase: EvalCase, cassette: CaseCassette): Failure[] {
  const seen = new Set<string>();
  return cassette.misses.filter((miss) => !seen.has(miss.hash) && seen.add(miss.hash)).map((miss) => ({
    expectation: "replay",
    message: `case ${evalCase.id}: no recorded reply for request ${miss.hash} (${miss.role ?? "model"}, ${miss.model}) in ${cassette.file}; the request differs from what was recorded (the suite, troupe's prompts or the models changed): record it again with --record`,
  }));
}

/**
 * Runs a suite: every case through the engine as `troupe run` would, each in its own fresh
 * workspace and thread, at most `concurrency` at once; checks each against its expectations
 * (and its judge); keeps every run; and returns the results. Progress goes to `onEvent`, and the
 * evals table holds the results so far as each case ends.
 */
export async function runEval(options: EvalRunOptions): Promise<EvalResults> {
  const { troupe, suite } = options;
  const evalId = options.evalId ?? newEvalId();
  const concurrency = Math.min(Math.max(1, options.concurrency ?? LIMITS.evalConcurrency), LIMITS.evalConcurrencyMax);
  const minPassRate = options.minPassRate ?? 1;
  const mode = options.cassettes?.mode ?? "live";
  const provider = choiceId(troupe.models.choice.worker);
  const models = Object.fromEntries(MODEL_ROLES.map((role) => [role, choiceId(troupe.models.choice[role])]));
  const root = evalDirectory(troupe, evalId);
  const startedAt = new Date();
  const started = performance.now();
  const evals = troupe.store.evals;
  if (!(await evals.get(evalId))) await evals.create({ id: evalId, owner: options.owner ?? null, name: suite.name, status: "running", provider, total: suite.cases.length, minPassRate, concurrency, suite: suite.cases });
  await evals.update(evalId, { status: "running" });
  const emit = (event: EvalEvent): void => options.onEvent?.(event);
  emit({ type: "eval-start", evalId, suite: suite.name, total: suite.cases.length, provider, concurrency, mode });

  const results = new Map<number, CaseResult>();
  let passing = 0;
  let failing = 0;
  const snapshot = (status: EvalStatus): EvalResults => assemble({ evalId, suite, provider, models, mode, status, minPassRate, results, startedAt, started });

  const runCase = async (evalCase: EvalCase, index: number): Promise<void> => {
    const result = await evaluateCase(evalCase, { ...options, evalId, root, mode });
    results.set(index, result);
    if (result.passed) passing += 1;
    else failing += 1;
    // The tally as this case left it, told before the await: cases ending while the row is written
    // would otherwise each report the count after the last of them (`[2/3]` twice, then `[3/3]`).
    const tally = { done: passing + failing, passing, failing };
    emit({ type: "case-end", index, result: caseSummary(result), ...tally, total: suite.cases.length });
    await evals.update(evalId, { passed: tally.passing, failed: tally.failing, results: snapshot("running") });
  };

  let status: EvalStatus = "completed";
  let error: string | undefined;
  try {
    // A cancelled eval starts no more cases; the ones running stop with their runs (cancelled) and are reported.
    await pMap(suite.cases, async (evalCase, index) => (options.signal?.aborted ? undefined : runCase(evalCase, index)), { concurrency });
    if (options.signal?.aborted) status = "cancelled";
  } catch (caught) {
    status = "failed";
    error = errorMessage(caught);
  }
  const final = snapshot(status);
  await evals.update(evalId, { status, passed: final.passed, failed: final.failed, results: final, finishedAt: Date.now(), ...(error !== undefined ? { error } : {}) });
  emit({ type: "eval-end", status, total: final.total, passed: final.passed, failed: final.failed, passRate: final.passRate, meetsMinPassRate: final.meetsMinPassRate, ...(error !== undefined ? { error } : {}) });
  if (error !== undefined) throw new Error(error);
  return final;
}

interface CaseContext extends EvalRunOptions {
  evalId: string;
  root: string;
  mode: EvalResults["mode"];
}

/** One case: its workspace, its run (on its cassette when there is one), its judge and its verdict. */
async function evaluateCase(evalCase: EvalCase, context: CaseContext): Promise<CaseResult> {
  const started = performance.now();
  const workspace = path.join(context.root, evalCase.id);
  const base: Omit<CaseResult, "passed" | "status" | "failures" | "durationMs"> = {
    id: evalCase.id,
    task: evalCase.task,
    stopReason: null,
    runId: null,
    threadId: null,
    answer: null,
    metrics: emptyMetrics(),
    workspace,
  };
  const done = (fields: Pick<CaseResult, "status" | "failures"> & Partial<CaseResult>): CaseResult => ({
    ...base,
    ...fields,
    passed: fields.failures.length === 0,
    durationMs: Math.round(performance.now() - started),
  });

  let cassette: CaseCassette | undefined;
  if (context.cassettes) {
    const file = cassettePath(context.cassettes.directory, evalCase.id);
    const recorded = context.cassettes.recorded?.get(evalCase.id);
    if (context.cassettes.mode === "replay" && !recorded) {
      return done({ status: "error", failures: [{ expectation: "replay", message: `case ${evalCase.id}: there is no cassette ${file}; record the suite with --record first` }] });
    }
    cassette = new CaseCassette(context.cassettes.mode, file, [workspace, context.root], recorded);
  }

  try {
    await seedWorkspace(workspace, evalCase.files ?? {});
  } catch (error) {
    return done({ status: "error", failures: [{ expectation: "files", message: `the case's starting files could not be written: ${errorMessage(error).split("\n")[0]}` }] });
  }
  let result: RunResult;
  try {
    const engine = await context.troupe.withWorkspace(workspace, cassette ? { models: cassetteModelSet(context.troupe.models, cassette) } : {});
    try {
      result = await engine.run(
        { task: evalCase.task },
        {
          evalId: context.evalId,
          ...(context.owner !== undefined ? { owner: context.owner } : {}),
          ...(context.signal ? { signal: context.signal } : {}),
          onEvent: (event) => {
            if (event.type === "run-start") context.onEvent?.({ type: "case-start", caseId: evalCase.id, index: context.suite.cases.indexOf(evalCase), runId: event.runId, threadId: event.threadId });
          },
        },
      );
    } finally {
      engine.close();
    }
  } catch (error) {
    return done({ status: "error", failures: [{ expectation: "run", message: `the run could not go: ${errorMessage(error).split("\n")[0]}` }] });
  }
  Object.assign(base, { runId: result.runId, threadId: threadNameOf(context.owner, result.threadId), answer: result.answer, stopReason: result.stopReason, metrics: result.metrics });

  const failures = await checkExpectations(evalCase, result, workspace);
  let judge: JudgeOutcome | undefined;
  const rubric = evalCase.expect?.judge;
  if (rubric) {
    const models = cassette ? cassetteModelSet(context.troupe.models, cassette) : context.troupe.models;
    judge = await judgeAnswer(models, { task: evalCase.task, answer: result.answer, rubric: rubric.rubric, minScore: rubric.min_score, ...(context.signal ? { signal: context.signal } : {}) });
    const failed = judgeFailure(judge);
    if (failed) failures.push(failed);
  }
  if (cassette) {
    // First: a request that was not recorded explains the failures that follow from it.
    failures.unshift(...missFailure(evalCase, cassette));
    // A cancelled case's cassette would hold only part of its run: it is not written.
    if (cassette.mode === "record" && !context.signal?.aborted) {
      try {
        await writeCassette(cassette.file, { version: CASSETTE_VERSION, case: evalCase.id, task: evalCase.task, recordedAt: new Date().toISOString(), entries: cassette.entries });
      } catch (error) {
        failures.push({ expectation: "record", message: `the cassette ${cassette.file} could not be written: ${errorMessage(error)}` });
      }
    }
  }
  return done({ status: result.status, failures, ...(judge ? { judge } : {}) });
}

interface AssembleInput {
  evalId: string;
  suite: Suite;
  provider: string;
  models: Record<string, string>;
  mode: EvalResults["mode"];
  status: EvalStatus;
  minPassRate: number;
  results: ReadonlyMap<number, CaseResult>;
  startedAt: Date;
  started: number;
}

/** The results of the cases that have ended, in the suite's order; a case that has not run counts as not passed. */
function assemble(input: AssembleInput): EvalResults {
  const cases = [...input.results.entries()].sort(([a], [b]) => a - b).map(([, result]) => result);
  const total = input.suite.cases.length;
  const passed = cases.filter((item) => item.passed).length;
  const passRate = total === 0 ? 0 : Math.round((passed / total) * 10_000) / 10_000;
  const judges = cases.flatMap((item) => (item.judge ? [item.judge] : []));
  const judgeUsage = judges.reduce(
    (sum, judge) => ({
      llmCalls: sum.llmCalls + (judge.usage?.llmCalls ?? 0),
      promptTokens: sum.promptTokens + (judge.usage?.promptTokens ?? 0),
      completionTokens: sum.completionTokens + (judge.usage?.completionTokens ?? 0),
      costUsd: sum.costUsd + (judge.usage?.costUsd ?? 0),
    }),
    { llmCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0 },
  );
  return {
    evalId: input.evalId,
    suite: input.suite.name,
    provider: input.provider,
    models: input.models,
    mode: input.mode,
    status: input.status,
    total,
    passed,
    failed: cases.length - passed,
    passRate,
    minPassRate: input.minPassRate,
    meetsMinPassRate: passRate >= input.minPassRate,
    judged: judges.filter((judge) => judge.judged).length,
    notJudged: judges.filter((judge) => !judge.judged).length,
    cases,
    metrics: { ...sumMetrics(cases.map((item) => item.metrics)), durationMs: Math.round(performance.now() - input.started), judge: judgeUsage },
    startedAt: input.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
  };
}
