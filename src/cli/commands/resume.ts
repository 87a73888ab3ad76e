import type { Command } from "commander";
import { InputError, NotFoundError } from "../../core/errors.js";
import type { ResumeDecision } from "../../core/run.js";
import { addEngineFlags, driveAndReport, type EngineFlags, lookupTarget, openEngine } from "../engine-flags.js";

interface ResumeFlags extends EngineFlags {
  approve?: boolean;
  reject?: boolean;
  feedback?: string;
  answer?: string;
  json?: boolean;
}

/** The person's decision from the flags; none means "continue from the last checkpoint". */
export function decisionFromFlags(flags: ResumeFlags): ResumeDecision | undefined {
  const chosen = [flags.approve, flags.reject, flags.answer !== undefined].filter(Boolean).length;
  if (chosen > 1) throw new InputError("conflicting_flags", "use only one of --approve, --reject and --answer");
  if (flags.feedback !== undefined && !flags.reject) throw new InputError("conflicting_flags", "--feedback goes with --reject");
  if (flags.approve) return { decision: "approve" };
  if (flags.reject) return flags.feedback ? { decision: "reject", feedback: flags.feedback } : { decision: "reject" };
  if (flags.answer !== undefined) {
    if (flags.answer.trim() === "") throw new InputError("answer_required", "--answer needs some text");
    return { decision: "answer", answer: flags.answer };
  }
  return undefined;
}

export function registerResume(program: Command): void {
  const command = program
    .command("resume")
    .description("continue a thread's run: answer its approval or question, or pick it up after a crash")
    .argument("<thread>", "the thread id")
    .option("--approve", "approve the plan or answer that is waiting")
    .option("--reject", "reject it (with --feedback, the planner or synthesizer tries again)")
    .option("--feedback <text>", "why it was rejected")
    .option("--answer <text>", "answer the planner's question (or replace the answer waiting for approval)")
    .option("--json", "print only the result as one JSON object on stdout");
  addEngineFlags(command).action(async (thread: string, flags: ResumeFlags) => {
    const decision = decisionFromFlags(flags);
    const { latestRunOfThread } = await import("../../store/lookup.js");
    const { parseEnv } = await import("../../config/env.js");
    const env = parseEnv();
    const target = await lookupTarget(flags);
    const previous = await latestRunOfThread(target, thread);
    if (!previous) throw new NotFoundError("unknown_thread", `no run found for thread ${thread} in ${target.databaseUrl ? "the database" : target.dataDir}`);
    const recorded = typeof previous.request.provider === "string" ? previous.request.provider : undefined;
    const provider = flags.provider ?? (env.TROUPE_PROVIDER ? undefined : recorded);
    const troupe = await openEngine({ ...flags, provider });
    await driveAndReport(troupe, flags.json, (options) => troupe.resume(thread, decision, options));
  });
}
