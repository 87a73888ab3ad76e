import type { Command } from "commander";
import { InputError } from "../../core/errors.js";
import { truncate } from "../../core/text.js";
import { type DecideRequestInput, describeDecision, parseDecideRequest } from "../../core/vote.js";
import { abortOnInterrupt, addEngineFlags, type EngineFlags, openEngine } from "../engine-flags.js";
import { EXIT } from "../exit-codes.js";
import { color, out, parseNumberFlag, printJson } from "../io.js";

interface DecideFlags extends EngineFlags {
  options?: string;
  voters?: string;
  threshold?: string;
  weights?: string;
  json?: boolean;
}

const list = (text: string): string[] =>
  text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");

/** The flags as a decision request: `--voters 3` or `--voters research,code`; `--weights 2,1,1` or `--weights research=2`. */
export function parseDecideFlags(question: string, flags: DecideFlags): DecideRequestInput {
  if (flags.options === undefined) throw new InputError("missing_options", "--options is required: the choices, comma-separated (--options yes,no)");
  const request: DecideRequestInput = { question, options: list(flags.options) };
  if (flags.voters !== undefined) request.voters = /^\s*\d+\s*$/.test(flags.voters) ? parseNumberFlag(flags.voters) : list(flags.voters);
  if (flags.threshold !== undefined) request.threshold = parseNumberFlag(flags.threshold);
  if (flags.weights !== undefined) {
    const items = list(flags.weights);
    if (items.every((item) => item.includes("="))) {
      request.weights = Object.fromEntries(items.map((item) => [item.slice(0, item.indexOf("=")).trim(), parseNumberFlag(item.slice(item.indexOf("=") + 1))]));
    } else if (items.some((item) => item.includes("="))) {
      throw new InputError("invalid_weights", "--weights: give every voter's weight in order (2,1,1) or every one by name (research=2,code=1), not both");
    } else request.weights = items.map(parseNumberFlag);
  }
  // Checked before an engine is opened.
  parseDecideRequest(request);
  return request;
}

export function registerDecide(program: Command): void {
  const command = program
    .command("decide")
    .description("decide a question by the votes of several agents or models, against a consensus threshold")
    .argument("<question>", "the question to decide")
    .option("--options <a,b,…>", "the choices, comma-separated (2–10)")
    .option("--voters <n|names>", "how many voters (samples of the critic's model, or the config's decide.voters), or which: agent names and provider:model ids")
    .option("--threshold <share>", "the share of the (weighted) votes the decision needs, more than 0 and at most 1 (default 0.6)")
    .option("--weights <w,…>", "each voter's weight, in order (2,1,1) or by name (research=2)")
    .option("--json", "print only the result as one JSON object on stdout");
  addEngineFlags(command).action(async (question: string, flags: DecideFlags) => {
    const request = parseDecideFlags(question, flags);
    const troupe = await openEngine(flags);
    const interrupt = abortOnInterrupt();
    try {
      const result = await troupe.decide(request, { signal: interrupt.signal });
      if (flags.json) printJson(result);
      else {
        for (const vote of result.votes) {
          const choice = vote.choice === null ? color.yellow("abstained") : vote.choice;
          const weight = vote.weight !== 1 ? ` ×${vote.weight}` : "";
          out(`  ${vote.voter}${weight}${vote.model ? color.dim(` (${vote.model})`) : ""}: ${choice}${vote.choice !== null ? ` (confidence ${vote.confidence})` : ""} — ${truncate(vote.reason, 200)}`);
        }
        out(`counts: ${Object.entries(result.counts).map(([option, count]) => `${option} ${count}`).join(", ")}`);
        out(result.reached ? color.green(describeDecision(result)) : color.yellow(describeDecision(result)));
      }
      process.exitCode = result.reached ? EXIT.completed : EXIT.failed;
    } finally {
      interrupt.dispose();
      troupe.close();
    }
  });
}
