import type { Command } from "commander";
import { addEngineFlags, type EngineFlags, openEngine } from "../engine-flags.js";
import { out, printJson } from "../io.js";

interface ScheduleFlags extends EngineFlags {
  json?: boolean;
  thread?: string;
  name?: string;
  timezone?: string;
  catchUp?: string;
  onBusy?: string;
}

function when(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? "-" : new Date(ms).toISOString().replace("T", " ").slice(0, 16);
}

/** `troupe schedule add | list | remove`: tasks `troupe serve` runs on a cron schedule. */
export function registerSchedule(program: Command): void {
  const schedule = program.command("schedule").description("tasks run on a cron schedule by troupe serve (one run per tick, whatever the number of processes)");

  const add = schedule
    .command("add")
    .description("run a task on a schedule")
    .argument("<cron>", 'five fields: minute hour day-of-month month day-of-week ("0 9 * * 1-5": 9:00 on weekdays)')
    .argument("<task>", "what to do, in words")
    .option("--thread <id>", "run each time on this thread (a conversation: each run sees the earlier ones)")
    .option("--name <name>", "a name to list and remove it by (default: its id)")
    .option("--timezone <zone>", "the time zone the cron is read in (default UTC)")
    .option("--catch-up <policy>", "a tick missed while no server ran: once (run it once when one starts) or skip (default)")
    .option("--on-busy <strategy>", "when the thread's run is still going at a tick: reject, enqueue (default), interrupt, rollback")
    .option("--json", "print the schedule as JSON");
  addEngineFlags(add, false).action(async (cron: string, task: string, flags: ScheduleFlags) => {
    const { parseScheduleInput } = await import("../../runtime/schedules.js");
    const input = {
      cron,
      task,
      ...(flags.name !== undefined ? { name: flags.name } : {}),
      ...(flags.timezone !== undefined ? { timezone: flags.timezone } : {}),
      ...(flags.catchUp !== undefined ? { catchUp: flags.catchUp } : {}),
      ...(flags.thread !== undefined ? { threadId: flags.thread } : {}),
      ...(flags.onBusy !== undefined ? { onBusy: flags.onBusy } : {}),
    };
    // Checked before anything is opened: a bad cron or zone writes nothing.
    parseScheduleInput(input);
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const added = await troupe.schedules.add(input, { source: "cli" });
      if (flags.json) printJson(added);
      else out(`${added.name} (${added.id}): "${added.cron}" ${added.timezone} — next ${when(added.nextTick)}; troupe serve runs it`);
    } finally {
      await troupe.shutdown();
    }
  });

  const list = schedule.command("list").description("the schedules, with their last and next ticks").option("--json", "print them as JSON");
  addEngineFlags(list, false).action(async (flags: ScheduleFlags) => {
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const schedules = await troupe.schedules.list();
      if (flags.json) {
        printJson(schedules);
        return;
      }
      if (schedules.length === 0) out("no schedules");
      for (const item of schedules) {
        const thread = item.request.threadId ? ` thread ${item.request.threadId}` : "";
        out(`${item.name.padEnd(20)} ${item.cron.padEnd(16)} ${item.timezone.padEnd(12)} last ${when(item.lastFiredAt)}${item.lastRunId ? ` (${item.lastRunId})` : ""} next ${when(item.nextTick)} [${item.source}, catch-up ${item.catchUp}]${thread}  ${item.task}`);
      }
    } finally {
      await troupe.shutdown();
    }
  });

  const remove = schedule.command("remove").description("stop a schedule (by name or id)").argument("<name>", "its name or id").option("--json", "print it as JSON");
  addEngineFlags(remove, false).action(async (name: string, flags: ScheduleFlags) => {
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const removed = await troupe.schedules.remove(name);
      if (flags.json) printJson(removed);
      else out(`removed ${removed.name} (${removed.id})${removed.source === "config" ? "; it is in the config file too: remove it there, or the server writes it again" : ""}`);
    } finally {
      await troupe.shutdown();
    }
  });
}
