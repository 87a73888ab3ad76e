import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createInterface, type Interface } from "node:readline";
import type { Command } from "commander";
import { errorMessage, InputError } from "../../core/errors.js";
import { type ResumeDecision, RunRequest, type RunRequestInput, type RunResult } from "../../core/run.js";
import { truncate } from "../../core/text.js";
import type { InvokeOptions, Troupe } from "../../runtime/engine.js";
import { addEngineFlags, addReviewFlag, type EngineFlags, openEngine } from "../engine-flags.js";
import { color, err, formatMs, out, parseNumberFlag } from "../io.js";
import { createProgress } from "../progress.js";
import { planLines, unfinishedLine } from "../render.js";
import { describeElicitation } from "../../core/elicitation-prompt.js";

interface ChatFlags extends EngineFlags {
  thread?: string;
  historyBudget?: string;
  approvePlan?: boolean;
}

/** Lines of input kept in the history file (the newest). */
const HISTORY_LINES = 500;

const HELP = [
  "Each line is a task, run on this thread: later ones see the earlier turns (\"save it to f.txt\").",
  "  /approve              approve what the run waits for (a plan, a tool call, an answer)",
  "  /reject [feedback]    reject it (with feedback, the planner or synthesizer tries again)",
  "  /answer <text>        answer the planner's question",
  "  /runs                 the runs of this thread",
  "  /help                 this list",
  "  /quit                 leave (Ctrl-D too); Ctrl-C cancels a run that is going",
].join("\n");

/** The chat's input history, newest first, as readline takes it. */
function loadHistory(file: string): string[] {
  try {
    if (!existsSync(file)) return [];
    return readFileSync(file, "utf8").split("\n").filter(Boolean).slice(-HISTORY_LINES).reverse();
  } catch {
    return [];
  }
}

/** What a waiting run asks for, in one line, with the commands that answer it. */
function waitingLine(result: Pick<RunResult, "interrupt">): string {
  const interrupt = result.interrupt;
  if (!interrupt) return "the run is waiting";
  const { kind, payload } = interrupt;
  if (kind === "question") return `the planner asks: ${String(payload.question ?? "")}  → /answer <text> or /reject`;
  if (kind === "mcp-elicitation") return `${describeElicitation(payload)}\n  → /answer {…} or /reject`;
  if (kind === "tool-approval") {
    return `the ${String(payload.agent ?? "")} agent wants to run the ${String(payload.riskLevel ?? "")}-risk tool ${String(payload.tool ?? "")} ${truncate(JSON.stringify(payload.args ?? {}), 200)}  → /approve or /reject [feedback]`;
  }
  if (kind === "plan-approval") return "the plan waits for your approval  → /approve or /reject [feedback]";
  return "the answer waits for your approval  → /approve or /reject [feedback]";
}

/** A run's result in the chat: the answer (unless it streamed), then one line of outcome. */
function printTurn(result: RunResult, streamed: string): void {
  if (result.status === "interrupted") {
    if (result.interrupt?.kind === "plan-approval") for (const line of planLines(result.plan)) out(line);
    if (result.interrupt?.kind === "answer-approval") out(String(result.interrupt.payload.answer ?? ""));
    out(color.yellow(`⏸ ${waitingLine(result)}`));
    return;
  }
  if (result.answer && streamed.trim() !== result.answer.trim()) out(result.answer);
  else if (!result.answer && result.error) out(`No answer: ${result.error}`);
  const unfinished = unfinishedLine(result.trace.unfinished ?? []);
  const mark = result.status === "completed" ? color.green("✓") : color.red("✗");
  const metrics = result.metrics;
  out(color.dim(`${mark} ${result.status}${unfinished ? ` · ${unfinished}` : ""} · ${metrics.llmCalls} model, ${metrics.toolCalls} tool calls · ${formatMs(metrics.durationMs)} · ${result.runId}`));
}

/**
 * One chat session on a thread: reads lines, runs each as a task on the thread (progress on
 * stderr, the answer on stdout), and answers a waiting run with /approve, /reject or /answer.
 */
class ChatSession {
  readonly #troupe: Troupe;
  readonly #thread: string;
  readonly #request: Omit<RunRequestInput, "task">;
  readonly #historyFile: string;
  /** What the thread's latest run waits for, when it waits for a person. */
  #waiting: Pick<RunResult, "interrupt"> | undefined;
  #running: AbortController | undefined;

  constructor(troupe: Troupe, thread: string, request: Omit<RunRequestInput, "task">) {
    this.#troupe = troupe;
    this.#thread = thread;
    this.#request = request;
    this.#historyFile = path.join(troupe.store.directory, "chat-history");
  }

  get historyFile(): string {
    return this.#historyFile;
  }

  /** Ctrl-C: cancels the run that is going; false when none is. */
  cancel(): boolean {
    if (!this.#running) return false;
    err("cancelling the run…");
    this.#running.abort();
    return true;
  }

  /** Picks up a thread whose latest run waits for a person. */
  async greet(): Promise<void> {
    const latest = await this.#troupe.store.runs.latestForThread(this.#thread);
    out(color.bold(`troupe chat · thread ${this.#thread}`) + color.dim(`  (/help for commands, /quit to leave)`));
    if (!latest) return;
    const turns = await this.#troupe.store.runs.count({ threadId: this.#thread });
    out(color.dim(`${turns} earlier run${turns === 1 ? "" : "s"} on this thread; the latest: "${truncate(latest.task, 80)}" (${latest.status})`));
    if (latest.status === "interrupted" && latest.interrupt) {
      this.#waiting = { interrupt: latest.interrupt };
      out(color.yellow(`⏸ ${waitingLine(this.#waiting)}`));
    }
  }

  #remember(line: string): void {
    try {
      appendFileSync(this.#historyFile, `${line.replace(/[\r\n]+/g, " ")}\n`);
    } catch {
      // A history that cannot be written is not worth stopping the chat for.
    }
  }

  /** Handles one line; false when the session should end. */
  async handle(raw: string): Promise<boolean> {
    const line = raw.trim();
    if (line === "") return true;
    this.#remember(line);
    if (!line.startsWith("/")) {
      if (this.#waiting) {
        out(color.yellow(`the run waits for you first: ${waitingLine(this.#waiting)}`));
        return true;
      }
      await this.#drive((options) => this.#troupe.run({ ...this.#request, task: line, threadId: this.#thread }, options));
      return true;
    }
    const [command = "", ...rest] = line.slice(1).split(/\s+/);
    const argument = line.slice(1 + command.length).trim();
    switch (command.toLowerCase()) {
      case "quit":
      case "exit":
      case "q":
        return false;
      case "help":
        out(HELP);
        return true;
      case "runs":
        await this.#listRuns();
        return true;
      case "approve":
        await this.#decide({ decision: "approve" });
        return true;
      case "reject":
        await this.#decide(argument ? { decision: "reject", feedback: argument } : { decision: "reject" });
        return true;
      case "answer":
        if (!argument) out(color.yellow("/answer needs some text"));
        else await this.#decide({ decision: "answer", answer: argument });
        return true;
      default:
        out(color.yellow(`unknown command /${command}${rest.length > 0 ? " …" : ""}; /help lists them`));
        return true;
    }
  }

  async #listRuns(): Promise<void> {
    const runs = (await this.#troupe.store.runs.list({ threadId: this.#thread, limit: 100 })).reverse();
    if (runs.length === 0) out("no runs on this thread yet");
    runs.forEach((run, index) => out(`${String(index + 1).padStart(3)}. ${run.status.padEnd(11)} ${truncate(run.task.replace(/\s+/g, " "), 70)} ${color.dim(run.id)}`));
  }

  async #decide(decision: ResumeDecision): Promise<void> {
    if (!this.#waiting) {
      out(color.yellow("nothing is waiting for a decision"));
      return;
    }
    await this.#drive((options) => this.#troupe.resume(this.#thread, decision, options));
  }

  async #drive(invoke: (options: InvokeOptions) => Promise<RunResult>): Promise<void> {
    const controller = new AbortController();
    this.#running = controller;
    const progress = createProgress();
    try {
      const result = await invoke({ signal: controller.signal, onEvent: progress.onEvent });
      printTurn(result, progress.streamed());
      this.#waiting = result.status === "interrupted" ? result : undefined;
    } catch (error) {
      // A refused request (a bad task, a busy thread) is reported; the chat goes on.
      out(color.red(`error: ${errorMessage(error).split("\n")[0] ?? ""}`));
    } finally {
      this.#running = undefined;
    }
  }
}

export function registerChat(program: Command): void {
  const command = program
    .command("chat")
    .description("an interactive conversation: each line is a task run on one thread, which remembers the earlier turns")
    .option("--thread <id>", "the thread to talk on (default: a new one); an existing thread continues its conversation")
    .option("--history-budget <tokens>", "prompt tokens the earlier turns may take in the planner's prompt (default 2000; 0: none)")
    .option("--approve-plan", "pause for your approval of every plan");
  addReviewFlag(addEngineFlags(command)).action(async (flags: ChatFlags) => {
    const request: Omit<RunRequestInput, "task"> = {};
    if (flags.historyBudget !== undefined) {
      // Checked before the session starts, not at its first line.
      const budget = RunRequest.shape.historyBudget.safeParse(parseNumberFlag(flags.historyBudget));
      if (!budget.success || budget.data === undefined) throw new InputError("invalid_history_budget", `--history-budget: ${budget.error?.issues[0]?.message ?? "must be a number"}`);
      request.historyBudget = budget.data;
    }
    if (flags.approvePlan) request.approvePlan = true;
    const thread = flags.thread ?? `chat-${randomUUID().slice(0, 8)}`;
    if (!/^[A-Za-z0-9._:-]{1,128}$/.test(thread)) throw new InputError("invalid_thread", "a thread id is 1-128 letters, digits, '.', '_', ':' or '-'");
    const troupe = await openEngine(flags);
    const session = new ChatSession(troupe, thread, request);
    const terminal = Boolean(process.stdin.isTTY);
    const rl: Interface = createInterface({
      input: process.stdin,
      output: process.stdout,
      terminal,
      history: loadHistory(session.historyFile),
      historySize: HISTORY_LINES,
      prompt: color.cyan("you> "),
    });
    // Ctrl-C: cancels a run that is going; at the prompt, leaves.
    rl.on("SIGINT", () => {
      if (!session.cancel()) rl.close();
    });
    const onSignal = (): void => {
      if (!session.cancel()) rl.close();
    };
    process.on("SIGTERM", onSignal);
    // Piped input ends (and closes the interface) while lines read before it are still being run.
    let closed = false;
    rl.on("close", () => {
      closed = true;
    });
    const prompt = (): void => {
      if (terminal && !closed) rl.prompt();
    };
    try {
      await session.greet();
      prompt();
      for await (const line of rl) {
        if (!(await session.handle(line))) break;
        prompt();
      }
    } finally {
      process.off("SIGTERM", onSignal);
      rl.close();
      troupe.close();
    }
    out(color.dim(`bye · thread ${thread} (troupe chat --thread ${thread} continues it)`));
  });
}
