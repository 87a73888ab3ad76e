import { Command } from "commander";
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
import { registerTrust } from "./commands/trust.js";

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
  registerTrust(program);
  return program;
}
