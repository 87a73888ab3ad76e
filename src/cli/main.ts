#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { errorMessage } from "../core/errors.js";
import { registerAgents } from "./commands/agents.js";
import { registerAudit } from "./commands/audit.js";
import { registerDecide } from "./commands/decide.js";
import { registerChat } from "./commands/chat.js";
import { registerEval } from "./commands/eval.js";
import { registerGraph } from "./commands/graph.js";
import { registerMcp } from "./commands/mcp.js";
import { registerMemory } from "./commands/memory.js";
import { registerResume } from "./commands/resume.js";
import { registerRun } from "./commands/run.js";
import { registerRuns } from "./commands/runs.js";
import { registerServe } from "./commands/serve.js";
import { registerTools } from "./commands/tools.js";
import { registerMigrate } from "./commands/migrate.js";
import { registerWorker } from "./commands/worker.js";
import { registerGc } from "./commands/gc.js";
import { registerGrants } from "./commands/grants.js";
import { registerSchedule } from "./commands/schedule.js";
import { EXIT, exitCodeForError } from "./exit-codes.js";
import { err } from "./io.js";

/** The troupe command line. Heavy modules are imported by the commands that need them. */
export function createProgram(): Command {
  const program = new Command()
    .name("troupe")
    .description("A multi-agent problem solver: plans a task as a graph of subtasks, runs them in parallel, reviews, and answers.")
    .version("0.1.0")
    // One line on stderr for a usage error, like every other bad input (exit 2).
    .configureOutput({ outputError: (text, write) => write(`troupe: ${text.replace(/^error: /, "").trim()} (run with --help for usage)\n`) })
    .exitOverride();
  registerRun(program);
  registerResume(program);
  registerRuns(program);
  registerGraph(program);
  registerTools(program);
  registerAudit(program);
  registerEval(program);
  registerServe(program);
  registerDecide(program);
  registerAgents(program);
  registerMemory(program);
  registerChat(program);
  registerWorker(program);
  registerMigrate(program);
  registerMcp(program);
  registerGc(program);
  registerSchedule(program);
  registerGrants(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = createProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.completed;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help") return EXIT.completed;
      return EXIT.badInput;
    }
    err(`troupe: ${errorMessage(error).split("\n")[0]}`);
    return exitCodeForError(error);
  }
}

const code = await main(process.argv);
process.exitCode = code;
