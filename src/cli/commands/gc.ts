import type { Command } from "commander";
import { InputError } from "../../core/errors.js";
import { type GcReport, NEVER_COLLECTED, parseAge, parseKeep } from "../../core/retention.js";
import { addEngineFlags, type EngineFlags, openEngine } from "../engine-flags.js";
import { formatMs, out, printJson } from "../io.js";

interface GcFlags extends EngineFlags {
  olderThan?: string;
  keep?: string;
  dryRun?: boolean;
  auditOlderThan?: string;
  json?: boolean;
}

interface DeleteFlags extends EngineFlags {
  thread?: string;
  json?: boolean;
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(2)} MB`;
}

/** A report in lines, for people. */
function reportLines(report: GcReport): string[] {
  const verb = report.dryRun ? "would remove" : "removed";
  const statuses = Object.entries(report.byStatus).map(([status, count]) => `${count} ${status}`).join(", ");
  return [
    `${verb} ${report.runs} run(s)${statuses ? ` (${statuses})` : ""}, ${report.events} event(s), ${report.stashValues} stash value(s), ${report.webhookDeliveries} webhook deliver${report.webhookDeliveries === 1 ? "y" : "ies"}`,
    `threads: ${report.threads.deleted} deleted, ${report.threads.pruned} pruned · evals: ${report.evals} · audit rows: ${report.auditRows} · expired memory facts: ${report.expiredMemories}`,
    report.dryRun ? `database: ${megabytes(report.bytesBefore)} (nothing removed: --dry-run)` : `database: ${megabytes(report.bytesBefore)} → ${megabytes(report.bytesAfter)} in ${formatMs(report.durationMs)}`,
  ];
}

/** `troupe gc` and `troupe runs delete`: retention from the command line. */
export function registerGc(program: Command): void {
  const gc = program
    .command("gc")
    .description(`remove finished runs older than a given age, with their checkpoints, events and stash values, and give the space back (${NEVER_COLLECTED.join(", ")} runs are never collected)`)
    .requiredOption("--older-than <age>", "runs last changed longer ago than this: 30d, 12h, 90m, 2w")
    .option("--keep <statuses>", "keep runs with these statuses whatever their age: failed,cancelled")
    .option("--audit-older-than <age>", "also remove audit rows older than this (the audit trail is kept otherwise)")
    .option("--dry-run", "say what would be removed, removing nothing")
    .option("--json", "print the report as JSON");
  addEngineFlags(gc, false).action(async (flags: GcFlags) => {
    const olderThan = parseAge(flags.olderThan ?? "", "--older-than");
    const keep = parseKeep(flags.keep);
    const auditCutoff = flags.auditOlderThan !== undefined ? Date.now() - parseAge(flags.auditOlderThan, "--audit-older-than") : undefined;
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const report = await troupe.gc({ cutoff: Date.now() - olderThan, keep, dryRun: flags.dryRun === true, ...(auditCutoff !== undefined ? { auditCutoff } : {}) });
      if (flags.json) printJson(report);
      else for (const line of reportLines(report)) out(line);
    } finally {
      await troupe.shutdown();
    }
  });
}

/** `troupe runs delete <runId>` (or `--thread <id>`), under `troupe runs`. */
export function registerRunsDelete(runs: Command): void {
  const command = runs
    .command("delete")
    .description("delete a finished run (or a thread with --thread) with its checkpoints, events and stash values; a run that is queued, running or waiting must be cancelled first")
    .argument("[runId]", "the run to delete")
    .option("--thread <id>", "delete a whole thread instead: every run on it (all stopped) and its checkpoints")
    .option("--json", "print the report as JSON");
  addEngineFlags(command, false).action(async (runId: string | undefined, flags: DeleteFlags) => {
    if ((runId === undefined) === (flags.thread === undefined)) throw new InputError("invalid_arguments", "name a run to delete, or a thread with --thread (not both)");
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const report = flags.thread !== undefined ? await troupe.deleteThread(flags.thread) : await troupe.deleteRun(runId as string);
      if (flags.json) printJson(report);
      else for (const line of reportLines(report)) out(line);
    } finally {
      await troupe.shutdown();
    }
  });
}
