import { type Model, type ModelRequest, type ModelResponse, type StreamEvent, Usage } from "@openai/agents";
import { callsToMake, delegation, nextRole, report, roleOfTools, rolesWithWork } from "./coordination.js";
import type { CountedMessage, CountedTool, Meter } from "./meter.js";
import { type Observation, parseResult, progressOf, reportedObservations } from "./solution.js";
import { taskOfText } from "./tasks.js";
import { WORLD_TOOLS } from "./world.js";

/**
 * The oracle behind the OpenAI Agents SDK's `Model` interface, making the same decisions as the
 * LangChain one (coordination.ts) from what the SDK sends: the agent's tools (world tools, agents
 * as tools, or none) and handoffs, and the conversation items. It counts each request the same
 * way: the instructions and items as messages, the function tools and handoffs as OpenAI function
 * definitions.
 */

const WORLD = new Set(WORLD_TOOLS.map((tool) => tool.name));
/** The tool name an agent used as a tool gets in this benchmark (`lookup_agent`). */
export const agentToolName = (role: string) => `${role}_agent`;
const AGENT_TOOL = /^(.+)_agent$/;

type Item = Record<string, unknown> & { type?: string };

function itemText(item: Item): string {
  const content = item.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part: { text?: string; refusal?: string }) => part.text ?? part.refusal ?? "").join("");
  return "";
}

function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return output.map((part: { text?: string }) => part.text ?? "").join("");
  if (typeof output === "object" && output !== null && "text" in output) return String((output as { text: unknown }).text);
  return JSON.stringify(output) ?? "";
}

function itemsOf(request: ModelRequest): Item[] {
  return typeof request.input === "string" ? [{ type: "message", role: "user", content: request.input }] : (request.input as unknown as Item[]);
}

function parseArgs(text: unknown): Record<string, unknown> {
  try {
    return JSON.parse(String(text)) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** World tool calls with their results, and results reported in words (replies, agent tools' outputs, a delegate's input). */
export function itemObservations(items: readonly Item[]): Observation[] {
  const calls = new Map<string, { name: string; args: Record<string, unknown> }>();
  const observations: Observation[] = [];
  for (const item of items) {
    if (item.type === "function_call") calls.set(String(item.callId), { name: String(item.name), args: parseArgs(item.arguments) });
    else if (item.type === "function_call_result") {
      const call = calls.get(String(item.callId));
      const text = outputText(item.output);
      if (call && WORLD.has(call.name)) observations.push({ tool: call.name, args: call.args, result: parseResult(text) });
      else observations.push(...reportedObservations(text));
    } else if (item.type === "message" || item.role !== undefined) observations.push(...reportedObservations(itemText(item)));
  }
  return observations;
}

/** The request as counted: instructions and items as messages (a model turn's function calls as one message's tool calls). */
function countedPrompt(request: ModelRequest): { messages: CountedMessage[]; tools: CountedTool[] } {
  const messages: CountedMessage[] = request.systemInstructions ? [{ text: request.systemInstructions }] : [];
  let turn: CountedMessage | undefined;
  for (const item of itemsOf(request)) {
    if (item.type === "function_call") {
      if (!turn) {
        turn = { text: "", toolCalls: [] };
        messages.push(turn);
      }
      turn.toolCalls?.push({ name: String(item.name), args: parseArgs(item.arguments), id: String(item.callId), type: "tool_call" });
      continue;
    }
    turn = undefined;
    messages.push({ text: item.type === "function_call_result" ? outputText(item.output) : itemText(item) });
  }
  const tools: CountedTool[] = [
    ...request.tools.flatMap((tool) => (tool.type === "function" ? [{ type: "function" as const, function: { name: tool.name, description: tool.description, parameters: tool.parameters } }] : [])),
    ...request.handoffs.map((handoff) => ({ type: "function" as const, function: { name: handoff.toolName, description: handoff.toolDescription, parameters: handoff.inputJsonSchema } })),
  ];
  return { messages, tools };
}

let callCounter = 0;

export class OracleAgentsModel implements Model {
  readonly #meter: Meter;

  constructor(meter: Meter) {
    this.#meter = meter;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items = itemsOf(request);
    const task = taskOfText(items.map(itemText).join("\n"));
    if (!task) throw new Error("the oracle does not know this task");
    const observations = itemObservations(items);
    const progress = progressOf(task, observations);
    const toolNames = request.tools.flatMap((tool) => (tool.type === "function" ? [tool.name] : []));
    const handoffs = request.handoffs.map((handoff) => handoff.toolName);
    const parallel = request.modelSettings.parallelToolCalls !== false;
    const agentTools = toolNames.filter((name) => AGENT_TOOL.test(name));
    let role: string;
    let text = "";
    let calls: Array<{ name: string; args: Record<string, unknown> }> = [];
    const answer = () => task.answer(progress.results);
    if (agentTools.length > 0) {
      // An orchestrator with agents as tools: every role with work at once, each told what it needs.
      role = "orchestrator";
      const roles = rolesWithWork(progress).filter((name) => agentTools.includes(agentToolName(name)));
      if (roles.length === 0) text = answer();
      else calls = (parallel ? roles : roles.slice(0, 1)).map((name) => ({ name: agentToolName(name), args: { input: delegation(task, progress, name, observations) } }));
    } else {
      const own = roleOfTools(toolNames);
      const mine = own === "none" ? [] : callsToMake(progress, own, parallel);
      const next = nextRole(progress);
      const handoff = next ? request.handoffs.find((candidate) => candidate.toolName === `transfer_to_${next}`) : undefined;
      role = own === "none" ? "triage" : "specialist";
      if (mine.length > 0) calls = mine.map((call) => ({ name: call.tool, args: call.args }));
      else if (handoff) calls = [{ name: handoff.toolName, args: {} }];
      else if (handoffs.length > 0 || own === "none") text = answer();
      // Run as a tool: it reports what it got.
      else text = report(itemObservations(items.filter((item) => item.type === "function_call" || item.type === "function_call_result")));
    }
    const toolCalls = calls.map((call) => {
      callCounter += 1;
      return { name: call.name, args: call.args, id: `oracle_${callCounter}`, type: "tool_call" as const };
    });
    await this.#meter.record(role, countedPrompt(request), { text, toolCalls });
    const output = toolCalls.length > 0
      ? toolCalls.map((call) => ({ type: "function_call" as const, callId: call.id, name: call.name, arguments: JSON.stringify(call.args), status: "completed" as const }))
      : [{ type: "message" as const, role: "assistant" as const, status: "completed" as const, content: [{ type: "output_text" as const, text }] }];
    const usage = new Usage({ requests: 1, inputTokens: this.#meter.calls.at(-1)?.promptTokens ?? 0, outputTokens: this.#meter.calls.at(-1)?.completionTokens ?? 0, totalTokens: 0 });
    return { usage, output: output as ModelResponse["output"] };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(_request: ModelRequest): AsyncIterable<StreamEvent> {
    throw new Error("the oracle answers whole responses (Runner.run without stream)");
  }
}
