import { stat } from "node:fs/promises";
import path from "node:path";
import type { Command } from "commander";
import { ensureDirectory, readUserFile } from "../../core/user-files.js";
import { InputError } from "../../core/errors.js";
import { LIMITS } from "../../core/limits.js";
import type { Comparison } from "../../eval/compare.js";
import type { CassetteFile } from "../../eval/cassette.js";
import { EarlierResults } from "../../eval/results.js";
import { parseSuite, type Suite } from "../../eval/suite.js";
import { abortOnInterrupt, openEngine } from "../engine-flags.js";
import { EXIT } from "../exit-codes.js";
import { err, parseNumberFlag, printJson } from "../io.js";

interface EvalFlags {
  provider?: string;
  model?: string;
  dataDir?: string;
  concurrency?: string;
  json?: boolean;
  minPassRate?: string;
  out?: string;
  compare?: string;
  record?: string;
  replay?: string;
}

/** `0.9` or `90%`, from 0 to 1. */
export function parsePassRate(value: string): number {
  const text = value.trim();
  const rate = text.endsWith("%") ? parseNumberFlag(text.slice(0, -1)) / 100 : parseNumberFlag(text);
  if (!Number.isFinite(rate) || rate < 0 || rate > 1) throw new InputError("invalid_min_pass_rate", `--min-pass-rate must be a number from 0 to 1 (or a percentage), not "${value}"`);
  return rate;
}

function parseConcurrency(value: string | undefined): number {
  if (value === undefined) return LIMITS.evalConcurrency;
  const number = parseNumberFlag(value);
  if (!Number.isInteger(number) || number < 1 || number > LIMITS.evalConcurrencyMax) {
    throw new InputError("invalid_concurrency", `--concurrency must be a whole number from 1 to ${LIMITS.evalConcurrencyMax}, not "${value}"`);
  }
  return number;
}

async function readSuite(file: string): Promise<Suite> {
  let text: string;
  try {
    text = await readUserFile(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError("suite_unreadable", `cannot read the suite ${file}: ${code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : code === "ENOTREG" ? "it is not a regular file (a FIFO, a socket or a device)" : (error as Error).message}`);
  }
  return parseSuite(text, path.basename(file));
}

async function readEarlier(file: string): Promise<EarlierResults> {
  let value: unknown;
  try {
    value = JSON.parse(await readUserFile(file));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InputError("compare_unreadable", `--compare ${file}: ${code === "ENOENT" ? "no such file" : error instanceof SyntaxError ? `not JSON (${error.message})` : (error as Error).message}`);
  }
  const parsed = EarlierResults.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError("compare_invalid", `--compare ${file}: not the results of troupe eval (${issue?.path.join(".") || "file"}: ${issue?.message ?? "invalid"})`);
  }
  return parsed.data;
}

async function isFolder(target: string): Promise<boolean | undefined> {
  try {
    return (await stat(target)).isDirectory();
  } catch {
    return undefined;
  }
}

/** Every flag and file checked before anything is opened or run: a mistake costs nothing. */
async function checkInputs(suiteFile: string, flags: EvalFlags) {
  if (flags.record !== undefined && flags.replay !== undefined) throw new InputError("record_and_replay", "--record and --replay cannot be used together");
  const minPassRate = flags.minPassRate === undefined ? 1 : parsePassRate(flags.minPassRate);
  const concurrency = parseConcurrency(flags.concurrency);
  const suite = await readSuite(suiteFile);
  const earlier = flags.compare !== undefined ? await readEarlier(flags.compare) : undefined;
  let recorded: Map<string, CassetteFile | undefined> | undefined;
  if (flags.replay !== undefined) {
    if ((await isFolder(flags.replay)) !== true) throw new InputError("replay_missing", `--replay ${flags.replay}: no such folder of cassettes`);
    const { readCassettes } = await import("../../eval/cassette.js");
    recorded = await readCassettes(flags.replay, suite.cases.map((item) => item.id));
  }
  if (flags.record !== undefined && (await isFolder(flags.record)) === false) throw new InputError("record_invalid", `--record ${flags.record}: it is a file, not a folder`);
  if (flags.out !== undefined) {
    if ((await isFolder(flags.out)) === true) throw new InputError("out_invalid", `--out ${flags.out}: it is a folder; name a file`);
    if ((await isFolder(path.dirname(path.resolve(flags.out)))) !== true) throw new InputError("out_invalid", `--out ${flags.out}: the folder ${path.dirname(path.resolve(flags.out))} does not exist`);
  }
  return { minPassRate, concurrency, suite, earlier, recorded };
}

export function registerEval(program: Command): void {
  program
    .command("eval")
    .description("run a suite of tasks (JSON Lines) and check each against its expectations")
    .argument("<suite>", "the suite: one case a line, { id, task, files?, expect? }")
    .option("--provider <provider>", "model provider, or provider:model (default: TROUPE_PROVIDER, else offline)")
    .option("--model <model>", "model name for the provider (default: TROUPE_MODEL)")
    .option("--concurrency <n>", `cases run at once, 1–${LIMITS.evalConcurrencyMax} (default ${LIMITS.evalConcurrency})`)
    .option("--json", "print only the results as one JSON object on stdout")
    .option("--min-pass-rate <rate>", "the pass rate (0–1, or a percentage) below which the exit code is 1 (default 1: every case)")
    .option("--out <file>", "also write the results as JSON to this file (for --compare later)")
    .option("--compare <file>", "show what changed against an earlier results file (--out or --json)")
    .option("--record <dir>", "save every model request and reply, a cassette per case, in this folder")
    .option("--replay <dir>", "answer model calls from the cassettes in this folder; no network, a request not recorded fails its case")
    .option("--data-dir <dir>", "where runs and checkpoints are kept (default: TROUPE_DATA_DIR or ./.troupe); the cases' workspaces are made under <dir>/evals/")
    .action(async (suiteFile: string, flags: EvalFlags) => {
      const inputs = await checkInputs(suiteFile, flags);
      const [{ parseEnv }, { newEvalId, runEval }, { compareResults }, { replayEnv }, { printEvalProgress, printEvalResults }, { writeFileAtomic }] = await Promise.all([
        import("../../config/env.js"),
        import("../../eval/runner.js"),
        import("../../eval/compare.js"),
        import("../../eval/replay-env.js"),
        import("../eval-report.js"),
        import("../../tools/workspace-files.js"),
      ]);
      let env = parseEnv();
      if (flags.replay !== undefined) env = await replayEnv(env, { provider: flags.provider, model: flags.model });
      const evalId = newEvalId();
      const dataDir = path.resolve(flags.dataDir ?? env.TROUPE_DATA_DIR);
      // The engine's own workspace is the eval's folder, where each case gets its own below it.
      const troupe = await openEngine({ provider: flags.provider, model: flags.model, dataDir, workspace: path.join(dataDir, "evals", evalId) }, env);
      const interrupt = abortOnInterrupt();
      try {
        if (flags.record !== undefined) await ensureDirectory(flags.record);
        const cassettes =
          flags.record !== undefined
            ? { mode: "record" as const, directory: flags.record }
            : flags.replay !== undefined
              ? { mode: "replay" as const, directory: flags.replay, ...(inputs.recorded ? { recorded: inputs.recorded } : {}) }
              : undefined;
        const results = await runEval({
          troupe,
          suite: inputs.suite,
          evalId,
          concurrency: inputs.concurrency,
          minPassRate: inputs.minPassRate,
          signal: interrupt.signal,
          onEvent: printEvalProgress,
          ...(cassettes ? { cassettes } : {}),
        });
        const comparison: Comparison | undefined = inputs.earlier && flags.compare !== undefined ? compareResults(inputs.earlier, results, flags.compare) : undefined;
        const output = comparison ? { ...results, comparison } : results;
        if (flags.out !== undefined) {
          try {
            await writeFileAtomic(path.resolve(flags.out), `${JSON.stringify(output, null, 2)}\n`);
          } catch (error) {
            // The results are still printed below: nothing is lost.
            err(`troupe: --out ${flags.out}: ${(error as Error).message}`);
            process.exitCode = EXIT.failed;
          }
        }
        if (flags.json) printJson(output);
        else printEvalResults(results, comparison, dataDir);
        if (results.status === "cancelled") process.exitCode = EXIT.cancelled;
        else if (!results.meetsMinPassRate || process.exitCode === EXIT.failed) process.exitCode = EXIT.failed;
        else process.exitCode = EXIT.completed;
      } finally {
        interrupt.dispose();
        troupe.close();
      }
    });
}
