import { readUserFileSync } from "../../core/user-files.js";
import type { Command } from "commander";
import { InputError, NotFoundError } from "../../core/errors.js";
import { addEngineFlags, driveAndReport, type EngineFlags, lookupTarget, openEngine } from "../engine-flags.js";
import { out, printJson } from "../io.js";

interface HistoryFlags extends EngineFlags {
  json?: boolean;
}

interface ForkFlags extends EngineFlags {
  from: string;
  plan?: string;
  args?: string;
  thread?: string;
  json?: boolean;
}

/** A JSON file or flag value, read and parsed; a bad one is an InputError naming it. */
function readJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new InputError("invalid_json", `${what} is not valid JSON: ${(error as Error).message}`);
  }
}

function readPlanFile(file: string): unknown {
  let text: string;
  try {
    // Opened without blocking: a FIFO or a device named here is refused, not waited on.
    text = readUserFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError("plan_unreadable", `--plan ${file}: ${code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
  const value = readJson(text, `--plan ${file}`);
  // A plan file may be the subtasks, or an object with them (as `troupe runs show --json` prints a plan).
  const subtasks = Array.isArray(value) ? value : (value as { plan?: unknown; subtasks?: unknown } | null)?.subtasks ?? (value as { plan?: unknown } | null)?.plan;
  if (!Array.isArray(subtasks)) throw new InputError("invalid_plan", `--plan ${file} holds no list of subtasks (a JSON array, or an object with "subtasks")`);
  // The fields runs show adds to a subtask (status, summary, …) are not the plan's.
  return subtasks.map((subtask: Record<string, unknown>) => {
    if (subtask === null || typeof subtask !== "object") return subtask;
    const { id, label, agent, dependsOn, args, tool, mapOver, reads, writes, tools, capability } = subtask;
    return Object.fromEntries(Object.entries({ id, label, agent, dependsOn, args, tool, mapOver, reads, writes, tools, capability }).filter(([, item]) => item !== undefined));
  });
}

/** `troupe runs history <thread>` and `troupe runs fork <runId> --from …`: time travel on a thread's checkpoints. */
export function registerRunsTimeTravel(runs: Command): void {
  const history = runs
    .command("history")
    .description("a thread's checkpoints, oldest first: what each followed (intake, plan, subtasks ended, review, approval, answer) and what runs next")
    .argument("<thread>", "the thread id (see runs show)")
    .option("--json", "print the checkpoints as a JSON array");
  addEngineFlags(history, false).action(async (thread: string, flags: HistoryFlags) => {
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const entries = await troupe.history(thread);
      if (entries.length === 0) throw new NotFoundError("unknown_thread", `thread ${thread} has no checkpoints`);
      if (flags.json) {
        printJson(entries);
        return;
      }
      for (const entry of entries) {
        const when = entry.createdAt ? entry.createdAt.replace("T", " ").slice(0, 19) : "";
        const next = entry.next.length > 0 ? ` → ${entry.next.join(", ")}` : "";
        const waiting = entry.waiting.length > 0 ? ` (waiting: ${entry.waiting.join(", ")})` : "";
        out(`${entry.checkpointId}  ${when}  ${(entry.runId ?? "").padEnd(40)} ${entry.after}${next}${waiting}`);
      }
      out(`fork from one: troupe runs fork <runId> --from <checkpoint id or subtask id>`);
    } finally {
      await troupe.shutdown();
    }
  });

  const fork = runs
    .command("fork")
    .description("start a new run on a new thread from a subtask or checkpoint of a run: the finished results upstream are kept (no model or tool call repeated), the rest runs; the original is untouched")
    .argument("<runId>", "the run to fork")
    .requiredOption("--from <subtask|checkpoint>", "a subtask id (it and what depends on it run again) or a checkpoint id from runs history (what followed it runs again)")
    .option("--plan <file>", "a JSON file with the plan to run instead (subtasks whose definition changed run again)")
    .option("--args <json>", 'arguments to replace, by subtask: \'{"s2": {"x": 5}}\' (those subtasks run again)')
    .option("--thread <id>", "the new thread's id (default: a new one)")
    .option("--json", "print only the result as one JSON object on stdout");
  addEngineFlags(fork).action(async (runId: string, flags: ForkFlags) => {
    const request = {
      from: flags.from,
      ...(flags.plan !== undefined ? { plan: readPlanFile(flags.plan) } : {}),
      ...(flags.args !== undefined ? { args: readJson(flags.args, "--args") } : {}),
      ...(flags.thread !== undefined ? { threadId: flags.thread } : {}),
    };
    const { parseForkRequest } = await import("../../runtime/fork.js");
    const checked = parseForkRequest(request);
    // A run that does not exist is bad input: said before anything is opened (or made).
    const { withRunsReadOnly } = await import("../../store/lookup.js");
    const exists = await withRunsReadOnly(await lookupTarget(flags), async (store) => (await store.get(runId)) !== undefined);
    if (!exists) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
    const troupe = await openEngine(flags);
    await driveAndReport(troupe, flags.json, (options) => troupe.fork(runId, checked, options));
  });
}
