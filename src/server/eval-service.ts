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
import { FairQueue, KeyedCounts, NO_OWNER } from "../store/queue/fair-queue.js";
import { EVAL_HTTP_LIMITS, type EvalBody, type EvalCaseView, type EvalListQuery, type EvalSummary, type EvalView } from "./schemas.js";

export interface EvalServiceOptions {
  troupe: Troupe;
  hub: EventHub<StoredEvalEvent>;
  logger: Logger;
  /** Evals run at once, at most one per API key; the rest wait their turn, taken round-robin across keys (default 4). */
  maxRunning?: number;
  /**
   * Whether this process runs evals (default true). On Postgres an API process that only serves
   * (`--workers 0`) stores them, and a process with workers takes them up.
   */
  runs?: boolean;
}

interface ActiveEval {
  controller: AbortController;
  settled: Promise<void>;
}

/** How often a process that runs evals looks for evals accepted by other processes (Postgres). */
const EVAL_POLL_MS = 2_000;

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
  /** Evals waiting, by owner: taken round-robin, one running per owner at a time (a key's flood waits behind its own evals, not another key's). */
  readonly #queue = new FairQueue<string>();
  readonly #running = new KeyedCounts();
  readonly #active = new Map<string, ActiveEval>();
  readonly #runs: boolean;
  #accepting = true;
  #poll: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(options: EvalServiceOptions) {
    this.#troupe = options.troupe;
    this.#hub = options.hub;
    this.#log = options.logger;
    this.#maxRunning = options.maxRunning ?? 4;
    this.#runs = options.runs ?? true;
  }

  /** Whether several processes share the store (Postgres): evals are claimed, and followed across processes. */
  get #shared(): boolean {
    return this.#troupe.store.queue !== undefined;
  }

  /** Accepts a suite: checked case by case (a bad one is named), stored as a queued eval, and started when a slot is free. */
  async submit(principal: Principal, body: EvalBody): Promise<EvalRecord> {
    if (!this.#accepting) throw new TroupeError("shutting_down", "the server is shutting down; retry shortly", { retryAfterSeconds: 5 });
    const suite = suiteOfBody(body);
    const record = await this.#troupe.store.evals.create({
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
    if (this.#runs) this.#enqueue(record.id, record.owner);
    return record;
  }

  /** A principal's eval; another principal's is as good as missing. */
  async record(principal: Principal, evalId: string): Promise<EvalRecord> {
    const record = await this.#troupe.store.evals.get(evalId);
    if (!record || record.owner !== principal.id) throw new NotFoundError("eval_not_found", `no eval with id ${evalId}`, { eval_id: evalId });
    return record;
  }

  async list(principal: Principal, query: EvalListQuery): Promise<{ items: EvalSummary[]; total: number }> {
    const items = (await this.#troupe.store.evals.list({ owner: principal.id, limit: query.limit, offset: query.offset })).map((record) => evalSummary(record));
    return { items, total: await this.#troupe.store.evals.count({ owner: principal.id }) };
  }

  async view(principal: Principal, evalId: string): Promise<EvalView> {
    const record = await this.record(principal, evalId);
    const results = record.results as EvalResults | null;
    const finished = new Map((results?.cases ?? []).map((item) => [item.id, item]));
    const started = new Map<string, string>();
    for (const event of await this.events(evalId, 0, 100_000)) if (event.type === "case-start") started.set(event.caseId, event.runId);
    const statuses = new Map((await this.#troupe.store.runs.getMany([...started.values()])).map((run) => [run.id, run.status]));
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
        status: runId !== null ? (statuses.get(runId) ?? null) : null,
        failures: [],
        judge: null,
        metrics: null,
        duration_ms: null,
      };
    });
    return { ...evalSummary(record), cases, error: record.error, results: FINISHED.has(record.status) && results ? (results as unknown as Record<string, unknown>) : null };
  }

  /** The eval's stored events after a seq. */
  async events(evalId: string, afterSeq: number, limit: number): Promise<StoredEvalEvent[]> {
    return (await this.#troupe.store.events.listOf<EvalEvent>(evalId, afterSeq, limit)).map((event) => ({ ...event, evalId }));
  }

  isActive(evalId: string): boolean {
    return this.#active.has(evalId);
  }

  /**
   * Stops an eval: a queued one at once, a running one after its running cases are cancelled (on
   * Postgres, the process running it is asked over the control channel, and the answer waits up
   * to 10 s for it to stop).
   */
  async cancel(principal: Principal, evalId: string): Promise<EvalRecord> {
    const record = await this.record(principal, evalId);
    if (FINISHED.has(record.status)) throw new ConflictError("eval_finished", `the eval has already ${record.status === "cancelled" ? "been cancelled" : "finished"}`, { status: record.status });
    const active = this.#active.get(evalId);
    if (active) {
      active.controller.abort();
      await active.settled;
    } else {
      this.#queue.remove(evalId);
      if (record.status === "queued" || !this.#shared) {
        await this.#finish(evalId, "cancelled", undefined, ["queued"].concat(this.#shared ? [] : ["running"]) as EvalRecord["status"][]);
      }
      const now = await this.#troupe.store.evals.get(evalId);
      if (this.#shared && now && !FINISHED.has(now.status)) {
        // Run by another process: ask it, and wait for it to stop.
        await this.#troupe.store.control?.send({ action: "cancel", runId: evalId });
        const deadline = Date.now() + 10_000;
        for (;;) {
          const current = await this.#troupe.store.evals.get(evalId);
          if (!current || FINISHED.has(current.status) || Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    }
    return (await this.#troupe.store.evals.get(evalId)) as EvalRecord;
  }

  /**
   * Takes up what a previous server left: a queued eval waits for its turn again; one that was
   * running is failed, with the runs of its cases that had not stopped (they belong to its
   * workspaces, and no one resumes them): submit it again.
   */
  async recover(): Promise<{ queued: number; failed: number }> {
    let queued = 0;
    let failed = 0;
    if (this.#shared && this.#runs) this.#follow();
    for (const record of await this.#troupe.store.evals.listUnsettled()) {
      if (this.#active.has(record.id) || this.#queue.includes(record.id)) continue;
      if (record.status === "queued") {
        if (!this.#runs) continue;
        this.#enqueue(record.id, record.owner);
        queued += 1;
        continue;
      }
      // On Postgres another process may be running it: only one whose hold is free has lost its runner.
      const lease = this.#shared ? await this.#troupe.store.threads.acquire(`eval:${record.id}`) : undefined;
      if (this.#shared && !lease) continue;
      try {
        const error = "the server stopped while this eval ran; submit it again";
        for (const run of await this.#troupe.store.runs.listUnsettledOfEval(record.id)) {
          await this.#troupe.store.runs.update(run.id, { status: "failed", stopReason: "failed", error, pid: null, finishedAt: Date.now() });
        }
        await this.#finish(record.id, "failed", error);
        failed += 1;
      } finally {
        await lease?.release();
      }
    }
    if (queued + failed > 0) this.#log.info({ queued, failed }, "took up unfinished evals");
    return { queued, failed };
  }

  /** Postgres: takes up evals other processes accepted (they are claimed, so one process runs each), and hears cancels. */
  #follow(): void {
    if (this.#poll) return;
    this.#poll = setInterval(() => {
      if (!this.#accepting || this.#active.size >= this.#maxRunning) return;
      void this.#troupe.store.evals
        .listUnsettled()
        .then((records) => {
          for (const record of records) if (record.status === "queued" && !this.#active.has(record.id) && !this.#queue.includes(record.id)) this.#enqueue(record.id, record.owner);
        })
        .catch(() => {});
    }, EVAL_POLL_MS);
    this.#poll.unref();
    this.#unsubscribe = this.#troupe.store.control?.subscribe((message) => {
      if (message.action === "cancel" && message.runId) this.#active.get(message.runId)?.controller.abort();
    });
  }

  /** Stops accepting and cancels the running evals (their cases' runs are cancelled); queued ones wait for the next server. */
  async shutdown(): Promise<void> {
    this.#accepting = false;
    if (this.#poll) clearInterval(this.#poll);
    this.#unsubscribe?.();
    const active = [...this.#active.values()];
    for (const run of active) run.controller.abort();
    await Promise.all(active.map((run) => run.settled));
  }

  async #finish(evalId: string, status: "cancelled" | "failed", error?: string, ifStatus?: EvalRecord["status"][]): Promise<void> {
    const record = await this.#troupe.store.evals.get(evalId);
    if (!record) return;
    const changed = await this.#troupe.store.evals.update(evalId, { status, finishedAt: Date.now(), ...(error !== undefined ? { error } : {}) }, ifStatus ? { ifStatus } : {});
    if (!changed) return;
    const passRate = record.total === 0 ? 0 : record.passed / record.total;
    await this.#publish(evalId, { type: "eval-end", status, total: record.total, passed: record.passed, failed: record.failed, passRate, meetsMinPassRate: passRate >= record.minPassRate, ...(error !== undefined ? { error } : {}) });
  }

  async #publish(evalId: string, event: EvalEvent): Promise<void> {
    this.#hub.publish({ ...(await this.#troupe.store.events.appendTo(evalId, event)), evalId });
  }

  #enqueue(evalId: string, owner: string | null): void {
    this.#queue.push(owner ?? NO_OWNER, evalId);
    setImmediate(() => this.#pump());
  }

  #pump(): void {
    while (this.#accepting && this.#active.size < this.#maxRunning) {
      const next = this.#queue.take((owner) => this.#running.count(owner) === 0);
      if (!next) break;
      const evalId = next.item;
      this.#running.start(next.key);
      // Held as active while it is claimed, so the slot counts at once.
      let settle: () => void = () => {};
      const placeholder: ActiveEval = { controller: new AbortController(), settled: new Promise<void>((resolve) => (settle = resolve)) };
      this.#active.set(evalId, placeholder);
      void this.#launch(evalId, placeholder)
        .catch((error: unknown) => this.#log.error({ err: error, evalId }, "eval could not start"))
        .finally(() => {
          if (this.#active.get(evalId) === placeholder) this.#active.delete(evalId);
          this.#running.end(next.key);
          settle();
          this.#pump();
        });
    }
  }

  async #launch(evalId: string, placeholder: ActiveEval): Promise<void> {
    const record = await this.#troupe.store.evals.get(evalId);
    if (!record || record.status !== "queued") return;
    // On Postgres several processes may take it up: the one whose claim changes its status runs it, holding it while it runs.
    const lease = this.#shared ? await this.#troupe.store.threads.acquire(`eval:${evalId}`) : undefined;
    if (this.#shared && !lease) return;
    if (!(await this.#troupe.store.evals.update(evalId, { status: "running" }, { ifStatus: ["queued"] }))) {
      await lease?.release();
      return;
    }
    let suite: Suite;
    try {
      suite = parseCases(
        (record.suite as unknown[]).map((value, index) => ({ value, where: `${record.name}[${index}]` })),
        record.name,
      );
    } catch (error) {
      await this.#finish(evalId, "failed", errorMessage(error));
      await lease?.release();
      return;
    }
    const controller = placeholder.controller;
    const log = this.#log.child({ evalId });
    const settled = runEval({
      troupe: this.#troupe,
      suite,
      evalId,
      concurrency: record.concurrency,
      minPassRate: record.minPassRate,
      signal: controller.signal,
      onEvent: (event) => void this.#publish(evalId, event),
      ...(record.owner !== null ? { owner: record.owner } : {}),
    })
      .then((results) => log.info({ status: results.status, passed: results.passed, total: results.total, passRate: results.passRate }, "eval finished"))
      .catch((error: unknown) => log.error({ err: error }, "eval failed"))
      .finally(async () => {
        this.#active.delete(evalId);
        await lease?.release();
        this.#pump();
      });
    this.#active.set(evalId, { controller, settled });
    await settled;
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
