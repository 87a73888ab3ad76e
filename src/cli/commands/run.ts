import { readUserFileSync } from "../../core/user-files.js";
import type { Command } from "commander";
import { Budget } from "../../core/budget.js";
import { InputError } from "../../core/errors.js";
import { MaxIterations, OUTPUT_SCHEMA_LIMITS, RunRequest, type RunRequestInput } from "../../core/run.js";
import { ON_BUSY, type OnBusy } from "../../core/on-busy.js";
import { addEngineFlags, addReviewFlag, driveAndReport, type EngineFlags, openEngine, reviewFlag } from "../engine-flags.js";
import { LIMITS } from "../../core/limits.js";
import { parseNumberFlag, readStdin } from "../io.js";

interface RunFlags extends EngineFlags {
  json?: boolean;
  approvePlan?: boolean;
  approveAnswer?: boolean;
  thread?: string;
  maxIterations?: string;
  context?: string;
  concurrency?: string;
  mapConcurrency?: string;
  promptBudget?: string;
  maxModelCalls?: string;
  maxTokens?: string;
  maxCost?: string;
  maxTime?: string;
  reviewers?: string;
  historyBudget?: string;
  onBusy?: string;
  webhook?: string;
  outputSchema?: string;
}

/** The budget flags as a Budget; a bad value names its flag. */
function budgetFromFlags(flags: RunFlags): Budget | undefined {
  const raw: Record<string, number> = {};
  const seconds = flags.maxTime !== undefined ? parseNumberFlag(flags.maxTime) : undefined;
  if (flags.maxModelCalls !== undefined) raw.maxModelCalls = parseNumberFlag(flags.maxModelCalls);
  if (flags.maxTokens !== undefined) raw.maxTokens = parseNumberFlag(flags.maxTokens);
  if (flags.maxCost !== undefined) raw.maxCostUsd = parseNumberFlag(flags.maxCost);
  if (seconds !== undefined) raw.maxWallTimeMs = Number.isFinite(seconds) && seconds > 0 ? Math.max(1, Math.round(seconds * 1000)) : Number.NaN;
  if (Object.keys(raw).length === 0) return undefined;
  const parsed = Budget.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const flag = { maxModelCalls: "--max-model-calls", maxTokens: "--max-tokens", maxCostUsd: "--max-cost", maxWallTimeMs: "--max-time" }[String(issue?.path[0])] ?? "budget";
    const message = issue?.code === "invalid_type" ? "must be a number" : (issue?.message.replace(/^\w+ /, "") ?? "invalid");
    throw new InputError("invalid_budget", `${flag}: ${message}`);
  }
  return parsed.data;
}

/** The JSON Schema in the file --output-schema names; a missing, unreadable or non-JSON file is bad input. */
function readOutputSchema(file: string): Record<string, unknown> {
  let text: string;
  try {
    // Opened without blocking: a FIFO or a device named here is refused, not waited on.
    text = readUserFileSync(file, OUTPUT_SCHEMA_LIMITS.maxBytes * 4);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "no such file" : code === "EFBIG" ? `the file is larger than a schema may be (at most ${OUTPUT_SCHEMA_LIMITS.maxBytes / 1024} KiB)` : (error as Error).message;
    throw new InputError("invalid_output_schema", `--output-schema ${file}: ${why}`);
  }
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (error) {
    throw new InputError("invalid_output_schema", `--output-schema ${file} is not JSON: ${(error as Error).message}`);
  }
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) throw new InputError("invalid_output_schema", `--output-schema ${file} must hold a JSON Schema object`);
  return schema as Record<string, unknown>;
}

/** Checks the request before anything is opened or written. */
export function parseRunRequest(task: string, flags: RunFlags): RunRequestInput {
  const input: RunRequestInput = {
    task,
    approvePlan: Boolean(flags.approvePlan),
    approveAnswer: Boolean(flags.approveAnswer),
  };
  if (flags.maxIterations !== undefined) {
    const parsed = MaxIterations.safeParse(parseNumberFlag(flags.maxIterations));
    if (!parsed.success) throw new InputError("invalid_max_iterations", `--max-iterations: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    input.maxIterations = parsed.data;
  }
  if (flags.concurrency !== undefined) input.concurrency = parseNumberFlag(flags.concurrency);
  if (flags.mapConcurrency !== undefined) input.mapConcurrency = parseNumberFlag(flags.mapConcurrency);
  if (flags.promptBudget !== undefined) input.promptBudget = parseNumberFlag(flags.promptBudget);
  if (flags.historyBudget !== undefined) input.historyBudget = parseNumberFlag(flags.historyBudget);
  if (flags.thread !== undefined) input.threadId = flags.thread;
  if (flags.reviewers !== undefined) input.reviewers = parseNumberFlag(flags.reviewers);
  const review = reviewFlag(flags.review);
  if (review) input.review = review;
  if (flags.context !== undefined) input.context = flags.context;
  if (flags.onBusy !== undefined) {
    if (!(ON_BUSY as readonly string[]).includes(flags.onBusy)) throw new InputError("invalid_on_busy", `--on-busy must be one of ${ON_BUSY.join(", ")}`);
    input.onBusy = flags.onBusy as OnBusy;
  }
  if (flags.webhook !== undefined) input.webhook = { url: flags.webhook };
  if (flags.outputSchema !== undefined) input.outputSchema = readOutputSchema(flags.outputSchema);
  const budget = budgetFromFlags(flags);
  if (budget) input.budget = budget;
  const checked = RunRequest.safeParse(input);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
    throw new InputError("invalid_request", `${where}${issue?.message ?? "invalid request"}`);
  }
  return input;
}

export function registerRun(program: Command): void {
  const command = program
    .command("run")
    .description("plan and run a task")
    .argument("<task>", 'what to do, in words (1–5,000 characters); "-" reads it from stdin')
    .option("--json", "print only the result as one JSON object on stdout")
    .option("--approve-plan", "pause for a person to approve the plan")
    .option("--approve-answer", "pause for a person to approve the answer")
    .option("--thread <id>", "thread id to run on (default: a new one)")
    .option("--max-iterations <n>", "review rounds, 1–50 (default 3)")
    .option("--context <text>", "extra context for the planner (at most 10 KB)")
    .option("--concurrency <n>", "subtasks run at once (default 8)")
    .option("--map-concurrency <n>", "items of a mapped subtask run at once, 1–100 (default 10)")
    .option("--prompt-budget <tokens>", "prompt tokens one model call may use; prompts are trimmed to fit, 1000–1000000 (default 8000)")
    .option("--history-budget <tokens>", "prompt tokens the thread's earlier turns may take in the planner's prompt, oldest trimmed first, 0–100000 (default 2000; 0: none)")
    .option("--max-model-calls <n>", "budget: stop after this many model calls")
    .option("--max-tokens <n>", "budget: stop after this many tokens (prompt + completion)")
    .option("--max-cost <usd>", "budget: stop after this much cost in US dollars")
    .option("--max-time <seconds>", "budget: stop after this much running time")
    .option("--reviewers <n>", "reviewers on the critic's panel, 1–7: their verdicts are combined by vote (default 1)")
    .option("--on-busy <strategy>", "when the thread's run is running or waiting: reject, enqueue (default: run after it), interrupt (stop it at its next step, run on its state), rollback (discard it, run from the state before it)")
    .option("--webhook <url>", "POST the run's end (and waits for a person) to this URL, signed with the secret in webhooks.secretEnv (default TROUPE_WEBHOOK_SECRET)")
    .option("--output-schema <file>", "a JSON Schema the answer must match: it is written as JSON (the result's `output`), or the run fails with the validation errors");
  addReviewFlag(addEngineFlags(command)).action(async (task: string, flags: RunFlags) => {
    // "-": the task is what stdin holds (a task is at most 5,000 characters; a little more is read so the error says so).
    const text = task === "-" ? await readStdin(LIMITS.taskMaxChars * 4 + 1_024, "task") : task;
    const request = parseRunRequest(text, flags);
    const troupe = await openEngine(flags, undefined, request);
    await driveAndReport(troupe, flags.json, (options) => troupe.run(request, options));
  });
}
