import type { Logger } from "pino";
import { ConflictError, errorMessage, NotFoundError, TroupeError } from "../core/errors.js";
import type { EvalEvent, StoredEvalEvent } from "../eval/events.js";
import type { CaseResult, EvalResults } from "../eval/results.js";
import { newEvalId, runEval } from "../eval/runner.js";
import { parseCases, parseSuite, type Suite } from "../eval/suite.js";
import { choiceId } from "../providers/registry.js";
import type { Troupe } from "../runtime/engine.js";
import type { EvalRecord } from "../store/index.js";
import type { Principal } from "./config.js";
import type { EventHub } from "./event-hub.js";
import { EVAL_HTTP_LIMITS, type EvalBody, type EvalCaseView, type EvalListQuery, type EvalSummary, type EvalView } from "./schemas.js";

export interface EvalServiceOptions {
  troupe: Troupe;
  hub: EventHub<StoredEvalEvent>;
  logger: Logger;
  /** Evals run at once; the rest wait their turn (default 2). */
  maxRunning?: number;
}

interface ActiveEval {
  controller: AbortController;
  settled: Promise<void>;
}

const FINISHED = new Set(["completed", "failed", "cancelled"]);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** Reads the cases of a suite body: JSON Lines text, or an array of case objects named by index. */
export function suiteOfBody(body: EvalBody): Suite {
  const name = body.name ?? "suite";
  if (typeof body.suite === "string") return parseSuite(body.suite, name, EVAL_HTTP_LIMITS.maxCases);
  return parseCases(
    body.suite.map((value, index) => ({ value, where: `${name}[${index}]` })),
    name,
    EVAL_HTTP_LIMITS.maxCases,
  );
}

/**
 * The server's evals: suites accepted over HTTP, stored before they are acknowledged, run like
 * `troupe eval` (each case in its own workspace, its run owned by the caller so its task page
 * opens it) at most `maxRunning` at a time, with their progress stored and streamed.
 */
export class EvalService {
  readonly #troupe: Troupe;
  readonly #hub: EventHub<StoredEvalEvent>;
  readonly #log: Logger;
  readonly #maxRunning: number;
  readonly #queue: string[] = [];
  readonly #active = new Map<string, ActiveEval>();
  #accepting = true;

  constructor(options: EvalServiceOptions) {
    this.#troupe = options.troupe;
    this.#hub = options.hub;
    this.#log = options.logger;
    this.#maxRunning = options.maxRunning ?? 2;
  }

  /** Accepts a suite: checked case by case (a bad one is named), stored as a queued eval, and started when a slot is free. */
  submit(principal: Principal, body: EvalBody): EvalRecord {
    if (!this.#accepting) throw new TroupeError("system", "shutting_down", "the server is shutting down; retry shortly", { retryAfterSeconds: 5 });
    const suite = suiteOfBody(body);
    const record = this.#troupe.store.evals.create({
      id: newEvalId(),
      owner: principal.id,
      name: suite.name,
      status: "queued",
      provider: choiceId(this.#troupe.models.choice.worker),
      total: suite.cases.length,
      minPassRate: body.min_pass_rate ?? 1,
      concurrency: body.concurrency ?? EVAL_HTTP_LIMITS.concurrencyDefault,
      suite: suite.cases,
    });
    this.#log.info({ evalId: record.id, cases: record.total }, "eval accepted");
    this.#enqueue(record.id);
    return record;
  }

  /** A principal's eval; another principal's is as good as missing. */
  record(principal: Principal, evalId: string): EvalRecord {
    const record = this.#troupe.store.evals.get(evalId);
    if (!record || record.owner !== principal.id) throw new NotFoundError("eval_not_found", `no eval with id ${evalId}`, { eval_id: evalId });
    return record;
  }

  list(principal: Principal, query: EvalListQuery): { items: EvalSummary[]; total: number } {
    const items = this.#troupe.store.evals.list({ owner: principal.id, limit: query.limit, offset: query.offset }).map((record) => evalSummary(record));
    return { items, total: this.#troupe.store.evals.count({ owner: principal.id }) };
  }

  view(principal: Principal, evalId: string): EvalView {
    const record = this.record(principal, evalId);
    const results = record.results as EvalResults | null;
    const finished = new Map((results?.cases ?? []).map((item) => [item.id, item]));
    const started = new Map<string, string>();
    for (const event of this.events(evalId, 0, 100_000)) if (event.type === "case-start") started.set(event.caseId, event.runId);
    const cases = (record.suite as Array<{ id: string; task: string }>).map((item): EvalCaseView => {
      const done: CaseResult | undefined = finished.get(item.id);
      if (done) {
        return {
          id: item.id,
          task: item.task,
          state: done.passed ? "passed" : "failed",
          run_id: done.runId,
          status: done.status,
          failures: done.failures,
          judge: done.judge ? { ...done.judge } : null,
          metrics: done.metrics,
          duration_ms: done.durationMs,
        };
      }
      const runId = started.get(item.id) ?? null;
      return {
        id: item.id,
        task: item.task,
        state: runId !== null && record.status === "running" ? "running" : "pending",
        run_id: runId,
        status: runId !== null ? (this.#troupe.store.runs.get(runId)?.status ?? null) : null,
        failures: [],
        judge: null,
        metrics: null,
        duration_ms: null,
      };
    });
    return { ...evalSummary(record), cases, error: record.error, results: FINISHED.has(record.status) && results ? (results as unknown as Record<string, unknown>) : null };
  }

  /** The eval's stored events after a seq. */
  events(evalId: string, afterSeq: number, limit: number): StoredEvalEvent[] {
    return this.#troupe.store.events.listOf<EvalEvent>(evalId, afterSeq, limit).map((event) => ({ ...event, evalId }));
  }

  isActive(evalId: string): boolean {
    return this.#active.has(evalId);
  }

  /** Stops an eval: a queued one at once, a running one after its running cases are cancelled. */
  async cancel(principal: Principal, evalId: string): Promise<EvalRecord> {
    const record = this.record(principal, evalId);
    if (FINISHED.has(record.status)) throw new ConflictError("eval_finished", `the eval has already ${record.status === "cancelled" ? "been cancelled" : "finished"}`, { status: record.status });
    const active = this.#active.get(evalId);
    if (active) {
      active.controller.abort();
      await active.settled;
    } else {
      const index = this.#queue.indexOf(evalId);
      if (index >= 0) this.#queue.splice(index, 1);
      this.#finish(evalId, "cancelled");
    }
    return this.#troupe.store.evals.get(evalId) as EvalRecord;
  }

  /**
   * Takes up what a previous server left: a queued eval waits for its turn again; one that was
   * running is failed, with the runs of its cases that had not stopped (they belong to its
   * workspaces, and no one resumes them): submit it again.
   */
  recover(): { queued: number; failed: number } {
    let queued = 0;
    let failed = 0;
    for (const record of this.#troupe.store.evals.listUnsettled()) {
      if (this.#active.has(record.id) || this.#queue.includes(record.id)) continue;
      if (record.status === "queued") {
        this.#enqueue(record.id);
        queued += 1;
        continue;
      }
      const error = "the server stopped while this eval ran; submit it again";
      for (const run of this.#troupe.store.runs.listUnsettledOfEval(record.id)) {
        this.#troupe.store.runs.update(run.id, { status: "failed", stopReason: "failed", error, pid: null, finishedAt: Date.now() });
      }
      this.#finish(record.id, "failed", error);
      failed += 1;
    }
    if (queued + failed > 0) this.#log.info({ queued, failed }, "took up unfinished evals");
    return { queued, failed };
  }

  /** Stops accepting and cancels the running evals (their cases' runs are cancelled); queued ones wait for the next server. */
  async shutdown(): Promise<void> {
    this.#accepting = false;
    const active = [...this.#active.values()];
    for (const run of active) run.controller.abort();
    await Promise.all(active.map((run) => run.settled));
  }

  #finish(evalId: string, status: "cancelled" | "failed", error?: string): void {
    const record = this.#troupe.store.evals.get(evalId);
    if (!record) return;
    this.#troupe.store.evals.update(evalId, { status, finishedAt: Date.now(), ...(error !== undefined ? { error } : {}) });
    const passRate = record.total === 0 ? 0 : record.passed / record.total;
    this.#publish(evalId, { type: "eval-end", status, total: record.total, passed: record.passed, failed: record.failed, passRate, meetsMinPassRate: passRate >= record.minPassRate, ...(error !== undefined ? { error } : {}) });
  }

  #publish(evalId: string, event: EvalEvent): void {
    this.#hub.publish({ ...this.#troupe.store.events.appendTo(evalId, event), evalId });
  }

  #enqueue(evalId: string): void {
    this.#queue.push(evalId);
    setImmediate(() => this.#pump());
  }

  #pump(): void {
    while (this.#accepting && this.#active.size < this.#maxRunning && this.#queue.length > 0) this.#launch(this.#queue.shift() as string);
  }

  #launch(evalId: string): void {
    const record = this.#troupe.store.evals.get(evalId);
    if (!record || record.status !== "queued") return;
    let suite: Suite;
    try {
      suite = parseCases(
        (record.suite as unknown[]).map((value, index) => ({ value, where: `${record.name}[${index}]` })),
        record.name,
      );
    } catch (error) {
      this.#finish(evalId, "failed", errorMessage(error));
      return;
    }
    const controller = new AbortController();
    const log = this.#log.child({ evalId });
    const settled = runEval({
      troupe: this.#troupe,
      suite,
      evalId,
      concurrency: record.concurrency,
      minPassRate: record.minPassRate,
      signal: controller.signal,
      onEvent: (event) => this.#publish(evalId, event),
      ...(record.owner !== null ? { owner: record.owner } : {}),
    })
      .then((results) => log.info({ status: results.status, passed: results.passed, total: results.total, passRate: results.passRate }, "eval finished"))
      .catch((error: unknown) => log.error({ err: error }, "eval failed"))
      .finally(() => {
        this.#active.delete(evalId);
        this.#pump();
      });
    this.#active.set(evalId, { controller, settled });
    log.info({ cases: suite.cases.length, concurrency: record.concurrency }, "eval started");
  }
}

/** An eval in a listing. */
export function evalSummary(record: EvalRecord): EvalSummary {
  const passRate = record.total === 0 ? 0 : Math.round((record.passed / record.total) * 10_000) / 10_000;
  return {
    eval_id: record.id,
    name: record.name,
    status: record.status,
    provider: record.provider,
    total: record.total,
    passed: record.passed,
    failed: record.failed,
    pass_rate: passRate,
    min_pass_rate: record.minPassRate,
    meets_min_pass_rate: passRate >= record.minPassRate,
    created_at: iso(record.createdAt) as string,
    finished_at: iso(record.finishedAt),
  };
}
