import type { PlannedSubtask, PlanOutput, SubtaskArg } from "../../core/plan.js";
import { type Intent, parseTask } from "./intents.js";

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function agentFor(intent: Intent): string {
  switch (intent.kind) {
    case "read":
    case "list":
    case "search":
      return "research";
    case "open":
      return intent.agent;
    default:
      return "execute";
  }
}

function argsFor(intent: Intent, previous: string | undefined): Record<string, SubtaskArg> {
  const fromPrevious = (): SubtaskArg | undefined => (previous ? { ref: previous, path: "$" } : undefined);
  switch (intent.kind) {
    case "compute":
      return { expression: { value: intent.expression } };
    case "write": {
      const content = intent.content !== undefined ? { value: intent.content } : fromPrevious();
      return content ? { path: { value: intent.path }, content } : { path: { value: intent.path } };
    }
    case "read":
      return { path: { value: intent.path } };
    case "list":
      return { path: { value: intent.path }, recursive: { value: intent.recursive } };
    case "json": {
      if ("text" in intent.source) return { text: { value: intent.source.text } };
      if ("path" in intent.source) return { path: { value: intent.source.path } };
      const text = fromPrevious();
      return text ? { text } : {};
    }
    case "search":
      return { query: { value: intent.query } };
    case "run":
      return intent.code !== undefined
        ? { language: { value: intent.language }, code: { value: intent.code } }
        : { language: { value: intent.language }, path: { value: intent.path ?? "" } };
    case "open":
      return {};
  }
}

/** A plan for a task whose clauses are all open-ended: gather what is needed, then answer. */
function openEndedPlan(task: string, intents: Intent[]): PlannedSubtask[] {
  const code = intents.some((intent) => intent.kind === "open" && intent.agent === "code");
  const topic = task.length > 200 ? `${task.slice(0, 199)}…` : task;
  if (code) {
    return [
      { id: "s1", label: `Work out the requirements and approach for: ${topic}`, agent: "research", dependsOn: [], args: {} },
      { id: "s2", label: `Write the code in the workspace for: ${topic}`, agent: "code", dependsOn: ["s1"], args: {} },
      { id: "s3", label: "Run the code and check its output", agent: "execute", dependsOn: ["s2"], args: {} },
    ];
  }
  return [
    { id: "s1", label: `Gather the facts and sources needed for: ${topic}`, agent: "research", dependsOn: [], args: {} },
    { id: "s2", label: `Draft the answer from the findings for: ${topic}`, agent: "research", dependsOn: ["s1"], args: {} },
  ];
}

/**
 * The offline planner: one subtask per recognised clause, chained where a clause refers back
 * ("save it"), independent otherwise so they run in parallel.
 */
export function planTask(task: string): PlanOutput {
  const intents = parseTask(task);
  if (intents.length === 0) return { subtasks: [], question: "The task has no words I can act on. What should be done?" };
  if (intents.every((intent) => intent.kind === "open")) return { subtasks: openEndedPlan(task, intents) };
  const subtasks: PlannedSubtask[] = intents.slice(0, 50).map((intent, index) => {
    const id = `s${index + 1}`;
    const previous = index > 0 ? `s${index}` : undefined;
    const args = argsFor(intent, intent.usesPrevious ? previous : undefined);
    const dependsOn = Object.values(args).flatMap((arg) => ("ref" in arg ? [arg.ref] : []));
    if (intent.kind === "open" && intent.usesPrevious && previous) dependsOn.push(previous);
    // A script runs after the clause that writes it.
    if (intent.kind === "run" && intent.path !== undefined) {
      const writer = intents.slice(0, index).findLastIndex((earlier) => earlier.kind === "write" && earlier.path === intent.path);
      if (writer >= 0) dependsOn.push(`s${writer + 1}`);
    }
    return { id, label: capitalize(intent.clause), agent: agentFor(intent), dependsOn: [...new Set(dependsOn)], args };
  });
  return { subtasks };
}
