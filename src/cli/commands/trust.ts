import type { Command } from "commander";
import { addEngineFlags, type EngineFlags, openEngine } from "../engine-flags.js";
import { color, out, printJson } from "../io.js";

interface TrustFlags extends EngineFlags {
  json?: boolean;
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** `troupe trust show <path>`: whether a workspace file is untrusted, and why (docs/trust.md). */
export function registerTrust(program: Command): void {
  const trust = program.command("trust").description("how troupe labels what tools bring in: untrusted unless the config trusts it (docs/trust.md)");
  const show = trust
    .command("show <path>")
    .description("whether a workspace file is untrusted, and why: the file it is (symlinks followed), its other names (hard links), and what troupe recorded of its data when it wrote, copied or moved it")
    .option("--json", "print it as JSON");
  addEngineFlags(show, false).action(async (requested: string, flags: TrustFlags) => {
    const troupe = await openEngine({ ...flags, provider: "offline" });
    try {
      const report = await troupe.explainFile(requested);
      if (flags.json) {
        printJson(report);
        return;
      }
      out(`${color.bold(report.real)}: ${report.trusted ? "trusted" : color.yellow("untrusted")}`);
      for (const reason of report.reasons) out(`  - ${reason}`);
      if (report.earlier.length > 0) {
        out("  recorded at this path before, no longer describing the file (changed since, outside troupe):");
        for (const record of report.earlier) out(`  · ${record.trust}: ${record.reason} (${record.tool}${record.runId ? `, run ${record.runId}` : ""}, ${when(record.createdAt)})`);
      }
    } finally {
      await troupe.shutdown();
    }
  });
}
