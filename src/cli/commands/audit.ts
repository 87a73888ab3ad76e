import type { Command } from "commander";
import { InputError } from "../../core/errors.js";
import { truncate } from "../../core/text.js";
import type { AuditFilter } from "../../store/audit/contract.js";
import type { LookupTarget } from "../../store/lookup.js";
import { AUDIT_DECISIONS, AUDIT_STATUSES, type AuditEntry } from "../../tools/audit.js";
import { err, out, parseNumberFlag, printJson } from "../io.js";

interface FilterFlags {
  run?: string;
  thread?: string;
  agent?: string;
  principal?: string;
  tool?: string;
  decision?: string;
  status?: string;
  dataDir?: string;
  databaseUrl?: string;
  json?: boolean;
}

interface ListFlags extends FilterFlags {
  limit?: string;
}

interface ExportFlags extends FilterFlags {
  format?: string;
  output?: string;
}

const CSV_COLUMNS = [
  "id", "at", "runId", "threadId", "subtaskId", "agent", "tool", "args", "decision", "status", "level", "grant", "reason",
  "resultPreview", "errorCode", "error", "durationMs", "attempts", "cached", "principal", "callId",
] as const;

function when(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
function csvField(value: unknown): string {
  const text = value === null || value === undefined ? "" : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function withFilters(command: Command): Command {
  return command
    .option("--run <id>", "only this run's calls")
    .option("--thread <id>", "only this thread's calls")
    .option("--agent <name>", "only this agent's calls (operator: direct calls)")
    .option("--principal <name>", "only the direct calls made over the HTTP API with this API key's name (local: without keys)")
    .option("--tool <name>", "only calls to this tool")
    .option("--decision <decision>", `only ${AUDIT_DECISIONS.join(", ")} calls`)
    .option("--status <status>", `only calls with this status: ${AUDIT_STATUSES.join(", ")} (started: begun and not finished — running now, or cut short by a crash)`)
    .option("--data-dir <dir>", "where runs and the audit trail are kept (default: TROUPE_DATA_DIR or ./.troupe)")
    .option("--database-url <url>", "postgres://…: read the audit trail on Postgres (default: TROUPE_DATABASE_URL)");
}

async function filterOf(flags: FilterFlags): Promise<{ directory: LookupTarget; filter: AuditFilter }> {
  if (flags.decision !== undefined && !AUDIT_DECISIONS.includes(flags.decision as AuditEntry["decision"])) {
    throw new InputError("invalid_decision", `--decision must be one of ${AUDIT_DECISIONS.join(", ")}`);
  }
  if (flags.status !== undefined && !AUDIT_STATUSES.includes(flags.status as AuditEntry["status"])) {
    throw new InputError("invalid_status", `--status must be one of ${AUDIT_STATUSES.join(", ")}`);
  }
  const { lookupTarget } = await import("../engine-flags.js");
  return {
    directory: await lookupTarget(flags),
    filter: {
      ...(flags.run !== undefined ? { runId: flags.run } : {}),
      ...(flags.thread !== undefined ? { threadId: flags.thread } : {}),
      ...(flags.agent !== undefined ? { agent: flags.agent } : {}),
      ...(flags.principal !== undefined ? { principal: flags.principal } : {}),
      ...(flags.tool !== undefined ? { tool: flags.tool } : {}),
      ...(flags.decision !== undefined ? { decision: flags.decision as AuditEntry["decision"] } : {}),
      ...(flags.status !== undefined ? { status: flags.status as AuditEntry["status"] } : {}),
    },
  };
}

/** `troupe audit list | stats | export`: the audit trail of tool calls. */
export function registerAudit(program: Command): void {
  const audit = program.command("audit").description("the audit trail of tool calls: every call, allowed, denied or failed");

  const list = audit.command("list").description("audit rows, oldest first (the newest --limit)").option("--limit <n>", "how many (default 50)").option("--json", "print the rows as a JSON array");
  withFilters(list).action(async (flags: ListFlags) => {
    const limit = flags.limit === undefined ? 50 : parseNumberFlag(flags.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw new InputError("invalid_limit", "--limit must be a whole number from 1 to 100000");
    const { directory, filter } = await filterOf(flags);
    const { withAuditReadOnly } = await import("../../store/lookup.js");
    const rows = (await withAuditReadOnly(directory, (store) => store.list({ ...filter, limit }))) ?? [];
    if (flags.json) {
      printJson(rows);
      return;
    }
    if (rows.length === 0) {
      out("no tool calls recorded");
      return;
    }
    for (const row of rows) {
      const result =
        row.status === "ok"
          ? (row.resultPreview ?? "")
          : row.status === "started"
            ? "not finished: running, or its process died while it ran (outcome unknown)"
            : `${row.errorCode ?? "error"}: ${row.error ?? ""}`;
      out(
        `${String(row.id).padStart(5)} ${when(row.at)} ${(row.runId ?? "-").slice(0, 12).padEnd(12)} ${(row.principal ? `${row.agent}[${row.principal}]` : row.agent).padEnd(9)} ${row.tool.padEnd(16)} ${row.decision.padEnd(8)} ${row.status.padEnd(7)} ${`${Math.round(row.durationMs)}ms`.padStart(7)}  ${truncate(row.args, 60)}  ${truncate(result.replace(/\s+/g, " "), 80)}`,
      );
    }
  });

  const stats = audit.command("stats").description("totals, success rate, by agent and by tool").option("--json", "print the statistics as JSON");
  withFilters(stats).action(async (flags: FilterFlags) => {
    const { directory, filter } = await filterOf(flags);
    const { withAuditReadOnly } = await import("../../store/lookup.js");
    const calls = (await withAuditReadOnly(directory, (store) => store.stats(filter))) ?? {
      total: 0, succeeded: 0, failed: 0, denied: 0, successRate: 0, approved: 0, rejected: 0, cached: 0, averageMs: 0, byAgent: {}, byTool: {},
    };
    // The critic's verdicts by type (seed 001 §3.1), for the run asked about or all of them.
    const { withStatsReadOnly } = await import("../../store/lookup.js");
    const reflections = (await withStatsReadOnly(directory, (store) => store.reflections(filter.runId ? { runId: filter.runId } : {}))) ?? null;
    const result = { ...calls, reflections };
    if (flags.json) {
      printJson(result);
      return;
    }
    const percent = (rate: number): string => `${(rate * 100).toFixed(1)}%`;
    out(`calls: ${result.total} · succeeded ${result.succeeded} · failed ${result.failed} (denied ${result.denied}) · success rate ${percent(result.successRate)}`);
    out(`approved by a person ${result.approved} · rejected ${result.rejected} · served from cache ${result.cached} · average ${result.averageMs} ms`);
    for (const [title, groups] of [["by agent", result.byAgent], ["by tool", result.byTool]] as const) {
      out(`${title}:`);
      for (const [name, counts] of Object.entries(groups)) {
        out(`  ${name.padEnd(18)} ${String(counts.total).padStart(6)} calls  ${String(counts.succeeded).padStart(6)} ok  ${String(counts.failed).padStart(6)} failed  ${String(counts.denied).padStart(6)} denied  ${percent(counts.successRate).padStart(7)}`);
      }
    }
    if (reflections) {
      out(`reflections: ${reflections.total} · passed ${reflections.passed} · failed ${reflections.failed} · pass rate ${percent(reflections.passRate)} · average confidence ${reflections.avgConfidence}`);
      for (const [type, counts] of Object.entries(reflections.byType)) {
        out(`  ${type.padEnd(18)} ${String(counts.total).padStart(6)} verdicts  ${String(counts.passed).padStart(6)} passed  ${percent(counts.passRate).padStart(7)}  confidence ${counts.avgConfidence}`);
      }
    }
  });

  const exporter = audit
    .command("export")
    .description("every matching row, as JSON lines or CSV")
    .requiredOption("--format <format>", "jsonl or csv")
    .option("--output <file>", "write to this file (atomically) instead of stdout");
  withFilters(exporter).action(async (flags: ExportFlags) => {
    if (flags.format !== "jsonl" && flags.format !== "csv") throw new InputError("invalid_format", "--format must be jsonl or csv");
    const { directory, filter } = await filterOf(flags);
    const { withAuditReadOnly } = await import("../../store/lookup.js");
    const lines: string[] = [];
    if (flags.format === "csv") lines.push(CSV_COLUMNS.join(","));
    const count =
      (await withAuditReadOnly(directory, async (store) => {
        let rows = 0;
        for await (const row of store.iterate(filter)) {
          rows += 1;
          lines.push(flags.format === "csv" ? CSV_COLUMNS.map((column) => csvField(row[column])).join(",") : JSON.stringify(row));
        }
        return rows;
      })) ?? 0;
    const text = lines.length > 0 ? `${lines.join("\n")}\n` : "";
    if (flags.output) {
      const { writeFileAtomic } = await import("../../tools/workspace-files.js");
      await writeFileAtomic(flags.output, text);
      err(`exported ${count} row(s) to ${flags.output}`);
    } else process.stdout.write(text);
  });
}
