import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * The Prometheus metrics of one server (seed 001, 1.3 part 4, plus HTTP). Each app has its own
 * registry, so tests can build several apps in one process.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly tasksTotal: Counter<"status">;
  readonly tasksSubmitted: Counter;
  readonly tasksDuration: Histogram<"status">;
  readonly toolCalls: Counter<"tool" | "outcome">;
  readonly llmCalls: Counter<"provider" | "model" | "outcome">;
  readonly llmTokens: Counter<"kind">;
  readonly reflectionPassRate: Gauge;
  readonly reflections: Gauge<"type" | "outcome">;
  readonly reflectionConfidence: Gauge<"type">;
  readonly tasksRunning: Gauge;
  readonly tasksQueued: Gauge;
  readonly workerRunsHeld: Gauge<"worker">;
  readonly leaseTakeovers: Counter<"worker">;
  readonly workerTakeovers: Gauge<"worker">;
  readonly queueDepth: Gauge;
  readonly workers: Gauge<"state">;
  readonly httpRequests: Counter<"method" | "route" | "status_code">;
  readonly httpDuration: Histogram<"method" | "route" | "status_code">;
  #verdicts = { passed: 0, total: 0 };

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.tasksTotal = new Counter({ name: "agent_tasks_total", help: "Tasks that ended, by final status", labelNames: ["status"], registers });
    this.tasksSubmitted = new Counter({ name: "agent_tasks_submitted_total", help: "Tasks accepted by POST /execute", registers });
    this.tasksDuration = new Histogram({
      name: "agent_tasks_duration_seconds",
      help: "Active run time of tasks that ended (waits for a person excluded), by final status",
      labelNames: ["status"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.toolCalls = new Counter({ name: "agent_tool_calls_total", help: "Tool calls, by tool and outcome (ok or the error code)", labelNames: ["tool", "outcome"], registers });
    this.llmCalls = new Counter({ name: "agent_llm_calls_total", help: "Model calls, by provider, model and outcome", labelNames: ["provider", "model", "outcome"], registers });
    this.llmTokens = new Counter({ name: "agent_llm_tokens_used", help: "Model tokens used, by kind (prompt, completion; cached: the prompt tokens a provider served from its cache, reasoning: the completion tokens a reasoning model thought with)", labelNames: ["kind"], registers });
    this.reflectionPassRate = new Gauge({ name: "agent_reflection_pass_rate", help: "Share of critic verdicts that passed, since the server started", registers });
    this.reflections = new Gauge({
      name: "agent_reflections",
      help: "Critic verdicts kept in the store, by type (validation: a plan's first review; correction: after a redo; improvement: after a re-plan) and outcome",
      labelNames: ["type", "outcome"],
      registers,
    });
    this.reflectionConfidence = new Gauge({ name: "agent_reflection_confidence_avg", help: "Average confidence of the critic verdicts kept in the store, by type", labelNames: ["type"], registers });
    this.tasksRunning = new Gauge({ name: "agent_tasks_running", help: "Tasks executing now", registers });
    this.tasksQueued = new Gauge({ name: "agent_tasks_queued", help: "Tasks waiting for a run slot", registers });
    this.workerRunsHeld = new Gauge({ name: "agent_worker_runs_held", help: "Runs each worker holds now (Postgres deployments; every worker's from the workers table)", labelNames: ["worker"], registers });
    this.leaseTakeovers = new Counter({ name: "agent_lease_takeovers_total", help: "Runs this worker took over from a worker that died while it held them", labelNames: ["worker"], registers });
    this.workerTakeovers = new Gauge({ name: "agent_worker_lease_takeovers", help: "Runs each worker has taken over since it started (from the workers table)", labelNames: ["worker"], registers });
    this.queueDepth = new Gauge({ name: "agent_queue_depth", help: "Runs waiting in the shared queue for a worker (Postgres deployments)", registers });
    this.workers = new Gauge({ name: "agent_workers", help: "Worker processes, by state (alive: heard from within the lease; silent: not)", labelNames: ["state"], registers });
    this.httpRequests = new Counter({
      name: "http_requests_total",
      help: "HTTP requests, by method, route and status code",
      labelNames: ["method", "route", "status_code"],
      registers,
    });
    this.httpDuration = new Histogram({
      name: "http_request_duration_seconds",
      help: "HTTP request duration, by method, route and status code",
      labelNames: ["method", "route", "status_code"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
  }

  /** Counts a critic verdict into the pass rate. */
  verdict(passed: boolean): void {
    this.#verdicts.total += 1;
    if (passed) this.#verdicts.passed += 1;
    this.reflectionPassRate.set(this.#verdicts.passed / this.#verdicts.total);
  }
}
