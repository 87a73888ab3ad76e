import path from "node:path";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { createSupervisor } from "@langchain/langgraph-supervisor";
import { Agent, Runner, setTracingDisabled } from "@openai/agents";
import { AgentRegistry, defineAgent } from "../../src/agents/define-agent.js";
import type { ReviewMode } from "../../src/core/review-mode.js";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import type { Meter } from "./meter.js";
import { agentToolName, OracleAgentsModel } from "./oracle-agents-model.js";
import { OracleChatModel } from "./oracle-chat-model.js";
import type { PlanStyle } from "./plan-writer.js";
import type { PeerTask } from "./tasks.js";
import { agentsTools, langchainTools, troupeRegistry } from "./tool-adapters.js";
import { ROLES, type ToolLatencies, WORLD_TOOLS } from "./world.js";

/**
 * Each framework set up as its documentation shows, over the same worker roles (lookup, math,
 * files) and tools, with the oracle as its model: troupe through its library API on its real
 * graph; a LangGraph supervisor (`createSupervisor`) over one `createReactAgent` per role; the
 * Agents SDK with a triage agent that hands off, and with an orchestrator that calls the roles'
 * agents as tools; and one `createReactAgent` with every tool as the floor.
 */

// No trace leaves the process: there is nowhere to send it, and exporting would add time the others do not spend.
setTracingDisabled(true);

export interface FrameworkRun {
  task: PeerTask;
  meter: Meter;
  latencies: ToolLatencies;
  /** The run's own folder: the workspace the files go to is `workspace` inside it. */
  directory: string;
}

export interface Framework {
  name: string;
  /** Troupe's own rows are compared with the best of the others. */
  troupe: boolean;
  /** Runs the task and returns the final answer; the time it takes is the makespan. Setup happens in `prepare`, untimed. */
  prepare(run: FrameworkRun): Promise<{ start: () => Promise<string>; close: () => Promise<void> }>;
}

const ALL_TOOLS = WORLD_TOOLS.map((tool) => tool.name);
export const workspaceOf = (run: FrameworkRun) => path.join(run.directory, "workspace");

const SUPERVISOR_PROMPT = `You are a team supervisor managing ${ROLES.map((role) => `a ${role.name} agent (${role.description})`).join(", ")}. Hand each part of the task to the agent for it, one at a time, and answer the user when the work is done.`;
const SINGLE_PROMPT = "You are a helpful assistant. Use the tools for every fact and every calculation, several at once when they are independent, and answer the user when done.";
const TRIAGE_PROMPT = "You route the user's task to the agent for each part of it.";
const ORCHESTRATOR_PROMPT = "You solve the user's task by calling the agents for its parts, several at once when they are independent, and answer the user when done.";

function troupeFramework(name: string, style: PlanStyle, review?: ReviewMode): Framework {
  return {
    name,
    troupe: true,
    prepare: async (run) => {
      const agents = new AgentRegistry();
      for (const role of ROLES) agents.register(defineAgent({ name: role.name, description: role.description, tools: role.tools, instructions: role.instructions, source: "code" }));
      const model = new OracleChatModel({ meter: run.meter, planStyle: style });
      const troupe = await Troupe.create({
        models: modelSetOf(model, { provider: "oracle", model: "oracle" }),
        tools: troupeRegistry(run.latencies),
        agents,
        config: {},
        ...(review ? { review } : {}),
        // As wide as the task's widest step (the README's advice for wide maps of tool calls).
        toolsConfig: { execution: { concurrency: 20 } },
        dataDir: path.join(run.directory, "data"),
        workspace: workspaceOf(run),
      });
      return {
        start: async () => {
          const result = await troupe.run({ task: run.task.prompt, mapConcurrency: 20 });
          if (result.status !== "completed") throw new Error(`troupe's run ${result.status} (${result.stopReason}): ${result.error ?? result.answer ?? ""}`.slice(0, 500));
          return result.answer ?? "";
        },
        close: async () => troupe.close(),
      };
    },
  };
}

const lastText = (messages: Array<{ content: unknown }>) => {
  const content = messages.at(-1)?.content;
  return typeof content === "string" ? content : JSON.stringify(content);
};

const supervisor: Framework = {
  name: "langgraph-supervisor",
  troupe: false,
  prepare: async (run) => {
    const model = new OracleChatModel({ meter: run.meter });
    const agents = ROLES.map((role) => createReactAgent({ llm: model, tools: langchainTools(role.tools, workspaceOf(run), run.latencies), name: role.name, description: role.description, prompt: role.instructions }));
    const app = createSupervisor({ agents, llm: model, prompt: SUPERVISOR_PROMPT }).compile();
    return {
      start: async () => lastText((await app.invoke({ messages: [{ role: "user", content: run.task.prompt }] }, { recursionLimit: 100 })).messages),
      close: async () => {},
    };
  },
};

const react: Framework = {
  name: "react-agent",
  troupe: false,
  prepare: async (run) => {
    const agent = createReactAgent({ llm: new OracleChatModel({ meter: run.meter }), tools: langchainTools(ALL_TOOLS, workspaceOf(run), run.latencies), prompt: SINGLE_PROMPT });
    return {
      start: async () => lastText((await agent.invoke({ messages: [{ role: "user", content: run.task.prompt }] }, { recursionLimit: 100 })).messages),
      close: async () => {},
    };
  },
};

function specialists(run: FrameworkRun, model: OracleAgentsModel): Agent[] {
  return ROLES.map(
    (role) =>
      new Agent({ name: role.name, instructions: role.instructions, handoffDescription: role.description, tools: agentsTools(role.tools, workspaceOf(run), run.latencies), model, modelSettings: { parallelToolCalls: true } }),
  );
}

const agentsHandoffs: Framework = {
  name: "agents-sdk-handoffs",
  troupe: false,
  prepare: async (run) => {
    const model = new OracleAgentsModel(run.meter);
    const team = specialists(run, model);
    // Each specialist can hand the conversation on to the others.
    for (const agent of team) agent.handoffs = team.filter((other) => other !== agent);
    const triage = new Agent({ name: "triage", instructions: TRIAGE_PROMPT, handoffs: team, model });
    const runner = new Runner({ tracingDisabled: true });
    return {
      start: async () => String((await runner.run(triage, run.task.prompt, { maxTurns: 50 })).finalOutput ?? ""),
      close: async () => {},
    };
  },
};

const agentsAsTools: Framework = {
  name: "agents-sdk-as-tools",
  troupe: false,
  prepare: async (run) => {
    const model = new OracleAgentsModel(run.meter);
    const tools = specialists(run, model).map((agent, index) => agent.asTool({ toolName: agentToolName(agent.name), toolDescription: ROLES[index]?.description ?? agent.name, runOptions: { maxTurns: 50 } }));
    const orchestrator = new Agent({ name: "orchestrator", instructions: ORCHESTRATOR_PROMPT, tools, model, modelSettings: { parallelToolCalls: true } });
    const runner = new Runner({ tracingDisabled: true });
    return {
      start: async () => String((await runner.run(orchestrator, run.task.prompt, { maxTurns: 50 })).finalOutput ?? ""),
      close: async () => {},
    };
  },
};

/** The frameworks compared, troupe first. */
export const FRAMEWORKS: readonly Framework[] = [troupeFramework("troupe", "offered"), supervisor, agentsHandoffs, agentsAsTools, react];

/** troupe with the oracle planning every step as a worker's subtask (what a planner that ignores direct steps gives): what direct steps save. */
export const TROUPE_WORKERS: Framework = troupeFramework("troupe (worker steps)", "workers");
