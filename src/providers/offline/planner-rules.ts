import type { PlannedSubtask, PlanOutput, SubtaskArg } from "../../core/plan.js";
import { orderByResources } from "../../core/resources.js";
import { type Intent, parseTask } from "./intents.js";

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Selects the outputs of a map's items that succeeded (a list, in the items' order). */
export const SUCCESSFUL_OUTPUTS = "$.results[?(@.status=='success')].output";

function agentFor(intent: Intent): string {
  switch (intent.kind) {
    case "copy":
    case "move":
    case "delete":
      return "execute";
    case "read":
    case "list":
    case "count":
    case "map":
    case "search":
      return "research";
    case "open":
      return intent.agent;
    default:
      return "execute";
  }
}

interface Previous {
  id: string;
  /** The previous subtask ran once per item: take the outputs of the items that succeeded. */
  mapped: boolean;
}

function argsFor(intent: Intent, previous: Previous | undefined): Record<string, SubtaskArg> {
  const fromPrevious = (): SubtaskArg | undefined => (previous ? { ref: previous.id, path: previous.mapped ? SUCCESSFUL_OUTPUTS : "$" } : undefined);
  switch (intent.kind) {
    case "compute":
      return { expression: { value: intent.expression } };
    case "write": {
      const content = intent.content !== undefined ? { value: intent.content } : fromPrevious();
      return content ? { path: { value: intent.path }, content } : { path: { value: intent.path } };
    }
    case "read":
      return { path: { value: intent.path } };
    case "copy":
    case "move":
      return { from: { value: intent.from }, to: { value: intent.to } };
    case "delete":
      return { path: { value: intent.path } };
    case "list":
      return { path: { value: intent.path }, recursive: { value: intent.recursive } };
    case "json": {
      if ("text" in intent.source) return { text: { value: intent.source.text } };
      if ("path" in intent.source) return { path: { value: intent.source.path } };
      const text = fromPrevious();
      return text ? { text } : {};
    }
    case "count":
      return intent.path !== undefined ? { path: { value: intent.path } } : {};
    case "search":
      return { query: { value: intent.query } };
    case "run":
      return intent.code !== undefined
        ? { language: { value: intent.language }, code: { value: intent.code } }
        : { language: { value: intent.language }, path: { value: intent.path ?? "" } };
    case "map":
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
 * The subtasks for "the same work on every file of a folder": list the folder with a direct
 * tool step (no model call), then run the work once per file, mapped over the listing's files.
 */
function mapSubtasks(intent: Extract<Intent, { kind: "map" }>, listId: string, mapId: string): PlannedSubtask[] {
  const action = intent.action || "read";
  return [
    {
      id: listId,
      label: `List the files in ${intent.folder}`,
      agent: "research",
      tool: "file_list",
      dependsOn: [],
      args: { path: { value: intent.folder }, recursive: { value: false } },
      reads: [intent.folder],
      writes: [],
    },
    {
      id: mapId,
      label: `${capitalize(action)} of each file in ${intent.folder}`,
      agent: "research",
      dependsOn: [listId],
      args: { path: { ref: listId, path: "$.entries[?(@.type=='file')].path" } },
      mapOver: "path",
      reads: [intent.folder],
      writes: [],
    },
  ];
}

/** The workspace paths a clause reads and writes, by the planner's rules. */
function resourcesFor(intent: Intent): { reads: string[]; writes: string[] } {
  switch (intent.kind) {
    case "write":
      return { reads: [], writes: [intent.path] };
    case "read":
    case "list":
      return { reads: [intent.path], writes: [] };
    case "count":
      return { reads: intent.path !== undefined ? [intent.path] : [], writes: [] };
    case "json":
      return { reads: "path" in intent.source ? [intent.source.path] : [], writes: [] };
    case "run":
      return { reads: intent.path !== undefined ? [intent.path] : [], writes: [] };
    case "copy":
      return { reads: [intent.from], writes: [intent.to] };
    case "move":
      return { reads: [], writes: [intent.from, intent.to] };
    case "delete":
      return { reads: [], writes: [intent.path] };
    default:
      return { reads: [], writes: [] };
  }
}

/**
 * The offline planner: one subtask per recognised clause (two for work on every file of a
 * folder), chained where a clause refers back ("save it"), independent otherwise so they run
 * in parallel — except where clauses use the same workspace path: each subtask declares the
 * paths it reads and writes, and those that share one run in the order the task gives them.
 */
export function planTask(task: string): PlanOutput {
  const intents = parseTask(task);
  if (intents.length === 0) return { subtasks: [], question: "The task has no words I can act on. What should be done?" };
  if (intents.every((intent) => intent.kind === "open")) return { subtasks: openEndedPlan(task, intents) };
  const subtasks: PlannedSubtask[] = [];
  let previous: Previous | undefined;
  /** The file the previous clause wrote, which "count its words" is about. */
  let lastWritten: string | undefined;
  for (const parsed of intents) {
    if (subtasks.length >= 49) break;
    const id = `s${subtasks.length + 1}`;
    if (parsed.kind === "map") {
      const planned = mapSubtasks(parsed, id, `s${subtasks.length + 2}`);
      subtasks.push(...planned);
      previous = { id: planned[1]?.id ?? id, mapped: true };
      lastWritten = undefined;
      continue;
    }
    const intent: Intent = parsed.kind === "count" && parsed.path === undefined && lastWritten !== undefined ? { ...parsed, path: lastWritten } : parsed;
    const args = argsFor(intent, intent.usesPrevious ? previous : undefined);
    const dependsOn = Object.values(args).flatMap((arg) => ("ref" in arg ? [arg.ref] : []));
    if (intent.kind === "open" && intent.usesPrevious && previous) dependsOn.push(previous.id);
    subtasks.push({ id, label: capitalize(intent.clause), agent: agentFor(intent), dependsOn: [...new Set(dependsOn)], args, ...resourcesFor(intent) });
    previous = { id, mapped: false };
    lastWritten = intent.kind === "write" ? intent.path : intent.kind === "copy" || intent.kind === "move" ? intent.to : undefined;
  }
  return { subtasks: orderByResources(subtasks, () => undefined, { followListOrder: true }).subtasks };
}
