import { stableStringify } from "../../src/core/text.js";
import type { RoleName } from "./world.js";
import type { PeerTask, Step, StepInput } from "./tasks.js";

/**
 * How the oracle knows where a task stands: from what it can see in the conversation — tool calls
 * with their results, and results other agents reported in words — it works out which steps of
 * the task's solution are done (a step is done when a call with exactly the arguments its inputs
 * give has a result), and which calls are ready to make next. Nothing is remembered between
 * model calls: a framework that does not show the model a result makes it call again.
 */

/** A tool call the model can see, with its result. */
export interface Observation {
  tool: string;
  args: Record<string, unknown>;
  result: unknown;
}

/** A call the solution needs next. */
export interface ReadyCall {
  step: Step;
  tool: string;
  args: Record<string, unknown>;
}

export interface Progress {
  /** Results of the finished steps (a mapped step's: the list of its items' results, in order). */
  results: Record<string, unknown>;
  ready: ReadyCall[];
  done: boolean;
}

const key = (tool: string, args: unknown) => `${tool} ${stableStringify(args)}`;

/** An input's value from the finished steps, or undefined while its step is not finished. */
export function inputValue(input: StepInput, results: Record<string, unknown>): unknown {
  if ("value" in input) return input.value;
  const source = results[input.ref];
  if (source === undefined) return undefined;
  const pick = (value: unknown) => (input.field === undefined ? value : (value as Record<string, unknown> | null)?.[input.field]);
  return input.each ? (source as unknown[]).map(pick) : pick(source);
}

/** The steps a step takes inputs from. */
export function dependenciesOf(step: Step): string[] {
  return [...new Set(Object.values(step.inputs).flatMap((input) => ("ref" in input ? [input.ref] : [])))];
}

/** Where the task stands given what has been observed. */
export function progressOf(task: PeerTask, observations: readonly Observation[]): Progress {
  const seen = new Map<string, unknown>();
  for (const observation of observations) seen.set(key(observation.tool, observation.args), observation.result);
  const results: Record<string, unknown> = {};
  const ready: ReadyCall[] = [];
  for (const step of task.steps) {
    if (!dependenciesOf(step).every((id) => id in results)) continue;
    const inputs = Object.fromEntries(Object.entries(step.inputs).map(([name, input]) => [name, inputValue(input, results)]));
    const calls = step.mapOver ? (inputs[step.mapOver] as unknown[]).map((item) => step.call({ ...inputs, [step.mapOver as string]: item })) : [step.call(inputs)];
    const outcomes = calls.map((args) => ({ args, result: seen.get(key(step.tool, args)), known: seen.has(key(step.tool, args)) }));
    if (outcomes.every((outcome) => outcome.known)) {
      results[step.id] = step.mapOver ? outcomes.map((outcome) => outcome.result) : outcomes[0]?.result;
      continue;
    }
    for (const outcome of outcomes) if (!outcome.known) ready.push({ step, tool: step.tool, args: outcome.args });
  }
  return { results, ready, done: task.steps.every((step) => step.id in results) };
}

/** The ready calls a role's tools can make. */
export function readyFor(progress: Progress, role: RoleName | undefined): ReadyCall[] {
  return role === undefined ? progress.ready : progress.ready.filter((call) => call.step.role === role);
}

/** A result as an agent reports it in words, one line each: `tool {args} → result`. */
export function reportLine(observation: Observation): string {
  return `${observation.tool} ${JSON.stringify(observation.args)} → ${JSON.stringify(observation.result)}`;
}

/** The results an agent reported in a text (its reply, or an agent-tool's output). */
export function reportedObservations(text: string): Observation[] {
  const observations: Observation[] = [];
  for (const line of text.split("\n")) {
    const match = /^(?:- )?([a-z_]+) (\{.*\}) → (.*)$/.exec(line.trim());
    if (!match) continue;
    try {
      observations.push({ tool: match[1] as string, args: JSON.parse(match[2] as string) as Record<string, unknown>, result: JSON.parse(match[3] as string) });
    } catch {
      // a line that only looks like a report
    }
  }
  return observations;
}

/** A tool result as the frameworks' transcripts carry it (JSON text), read back. */
export function parseResult(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
