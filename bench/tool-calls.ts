import { openStore } from "../src/store/index.js";
import { calculatorTool } from "../src/tools/builtin/calculator.js";
import { createCodeRunTool } from "../src/tools/builtin/code-run.js";
import type { ToolDefinition } from "../src/tools/define-tool.js";
import { Grant, PermissionPolicy } from "../src/tools/permissions.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { Bubblewrap } from "../src/tools/sandbox/bubblewrap.js";
import { type Summary, summarize, withTempDir } from "./support.js";

export interface ToolCallsOptions {
  calls: number;
  sandboxRuns: number;
}

export interface ToolCallsReport {
  calls: number;
  sandboxRuns: number;
  /** µs per calculator call: the tool's execute alone, through a bare registry, through the governed registry (policy + SQLite audit). */
  directUs: Summary;
  bareUs: Summary;
  governedUs: Summary;
  /** Governed over direct, and what the policy and audit add over a bare registry, on medians (µs). */
  governedOverheadUs: number;
  auditRows: number;
  /** ms per code_run: QuickJS in a worker thread, and a Python script under bubblewrap (null where bubblewrap is missing). */
  javascriptMs: Summary;
  pythonMs: Summary | null;
}

async function sample(calls: number, body: () => Promise<unknown>): Promise<number[]> {
  const micros: number[] = [];
  for (let index = 0; index < calls; index += 1) {
    const started = performance.now();
    await body();
    micros.push((performance.now() - started) * 1000);
  }
  return micros;
}

/**
 * Benchmark 7: what the tool platform costs per call. A calculator call is timed three ways
 * (execute alone, a registry without policy or audit, the engine's registry with its policy and
 * the SQLite audit trail), interleaved in rounds; then the two sandboxes are timed end to end.
 */
export async function measureToolCalls(options: ToolCallsOptions): Promise<ToolCallsReport> {
  return withTempDir("troupe-bench-tools-", async (directory) => {
    const store = await openStore(directory);
    try {
      const tool = calculatorTool as ToolDefinition;
      const bare = new ToolRegistry().register(tool);
      const governed = new ToolRegistry({
        policy: new PermissionPolicy({ grants: [Grant.parse({ agent: "execute", tool: "*", level: "EXECUTE" })] }),
        audit: store.audit,
      }).register(tool);
      const context = { workspace: directory, agent: "execute", runId: "bench", threadId: "bench" };
      const args = { expression: "17% of 2340" };
      const direct: number[] = [];
      const viaBare: number[] = [];
      const viaGoverned: number[] = [];
      const rounds = 10;
      for (let round = 0; round < rounds + 1; round += 1) {
        const per = Math.ceil(options.calls / rounds);
        const a = await sample(per, () => tool.execute(args, context));
        const b = await sample(per, () => bare.call("calculator", args, context));
        const c = await sample(per, () => governed.call("calculator", args, context));
        // The first round warms up the JIT and the prepared statements.
        if (round === 0) continue;
        direct.push(...a);
        viaBare.push(...b);
        viaGoverned.push(...c);
      }
      const code = new ToolRegistry().register(createCodeRunTool() as never);
      const codeContext = { workspace: directory };
      await code.call("code_run", { language: "javascript", code: "1" }, codeContext);
      const javascript = await sample(options.sandboxRuns, () => code.call("code_run", { language: "javascript", code: "[1, 2, 3].map((n) => n * n)" }, codeContext));
      const sandboxed = (await new Bubblewrap().unavailable()) === undefined;
      const python = sandboxed ? await sample(options.sandboxRuns, () => code.call("code_run", { language: "python", code: "print(sum(range(1000)))" }, codeContext)) : null;
      const directUs = summarize(direct);
      const bareUs = summarize(viaBare);
      const governedUs = summarize(viaGoverned);
      return {
        calls: direct.length,
        sandboxRuns: options.sandboxRuns,
        directUs,
        bareUs,
        governedUs,
        governedOverheadUs: governedUs.median - bareUs.median,
        auditRows: await store.audit.count(),
        javascriptMs: summarize(javascript.map((value) => value / 1000)),
        pythonMs: python ? summarize(python.map((value) => value / 1000)) : null,
      };
    } finally {
      await store.close();
    }
  });
}
