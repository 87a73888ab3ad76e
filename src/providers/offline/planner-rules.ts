import type { ConversationView } from "../../core/conversation.js";
import type { PlannedSubtask, PlanOutput, SubtaskArg } from "../../core/plan.js";
import { orderByResources } from "../../core/resources.js";
import { type Chained, combinationNoun, expandOperands, operandName } from "./arithmetic.js";
import { type EarlierResult, EarlierTurns } from "./conversation-rules.js";
import { applyFeedback } from "./feedback-rules.js";
import { type Intent, parseClause, parseTask } from "./intents.js";
import { OFFLINE_NOTICE } from "./synthesis-rules.js";

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Selects the outputs of a map's items that succeeded (a list, in the items' order). */
export const SUCCESSFUL_OUTPUTS = "$.results[?(@.status=='success')].output";

function agentFor(intent: Intent): string {
  switch (intent.kind) {
    case "copy":
    case "move":
      return "execute";
    case "delete":
      return "cleanup";
    case "remember":
    case "forget":
      return "memory";
    case "recall":
    case "previous":
    case "read":
    case "list":
    case "count":
    case "map":
    case "search":
    case "query":
      return "research";
    case "open":
      return intent.agent;
    default:
      return "execute";
  }
}

/**
 * The tools the worker of a clause will call (what the offline worker's rules call for it), so
 * the plan names them and the worker is offered only those; none for open-ended work.
 */
function toolsFor(intent: Intent): string[] {
  switch (intent.kind) {
    case "compute":
      return ["calculator"];
    case "write":
      return ["file_write"];
    case "read":
      return ["file_read"];
    case "list":
      return ["file_list"];
    case "json":
      return "path" in intent.source ? ["file_read", "json"] : ["json"];
    case "query":
      return ["file_read", "json"];
    case "count":
      return ["text_stats"];
    case "search":
      return ["web_search"];
    case "run":
      return ["code_run"];
    case "copy":
      return ["file_copy"];
    case "move":
      return ["file_move"];
    case "delete":
      return ["file_delete"];
    case "remember":
      return ["memory_save"];
    case "recall":
      return ["memory_search"];
    case "forget":
      return ["memory_search", "memory_forget"];
    case "map":
    case "open":
    case "previous":
      return [];
  }
}

/** A subtask whose result later clauses can take. */
interface Produced {
  id: string;
  /** It ran once per item: its value is the outputs of the items that succeeded. */
  mapped: boolean;
  /** Those outputs are numbers (a count of each file). */
  figures?: boolean;
}

/** A combination of every number in one list (a map's figures): a function of the list, or undefined (a product has none). */
function overList(chained: Chained): string | undefined {
  const { operands } = chained;
  if (operands.kind !== "all") return undefined;
  if ("call" in operands) return `${operands.call}({a})`;
  return operands.join === " + " ? "sum({a})" : undefined;
}

/** A template operand's name as a calculator variable: `x` and the operand (`{e}` would be the constant e). */
function variableName(operand: string): string {
  return `x${operand}`;
}

/**
 * The tool a clause runs as a direct step (no worker model call), when the plan knows every
 * argument: a literal calculation, and a write of literal text or of the number just computed
 * (the calculator's value, written as its decimal text).
 */
function directTool(intent: Intent, previous: Produced | undefined, numbers: readonly Produced[], usable: (tool: string) => boolean): string | undefined {
  if (intent.kind === "compute" && !intent.chained && usable("calculator")) return "calculator";
  if (intent.kind === "write" && !intent.several && usable("file_write")) {
    if (intent.content !== undefined) return "file_write";
    if (intent.usesPrevious && previous !== undefined && !previous.mapped && numbers.includes(previous)) return "file_write";
  }
  return undefined;
}

function refTo(produced: Produced): SubtaskArg {
  return { ref: produced.id, path: produced.mapped ? SUCCESSFUL_OUTPUTS : "$" };
}

function argsFor(intent: Intent, previous: Produced | undefined): Record<string, SubtaskArg> {
  const fromPrevious = (): SubtaskArg | undefined => (previous ? refTo(previous) : undefined);
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
      return intent.recursive ? { path: { value: intent.path }, recursive: { value: true } } : { path: { value: intent.path } };
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
    case "query":
      return { path: { value: intent.path } };
    case "remember":
      return intent.subject !== undefined ? { text: { value: intent.fact }, subject: { value: intent.subject } } : { text: { value: intent.fact } };
    case "recall":
    case "forget":
      return { query: { value: intent.query } };
    case "map":
    case "open":
    case "previous":
      return {};
  }
}

/** A plan for a task whose clauses are all open-ended: gather what is needed, then answer. */
function openEndedPlan(task: string, intents: Intent[]): PlannedSubtask[] {
  const code = intents.some((intent) => intent.kind === "open" && intent.agent === "code");
  const topic = task.length > 200 ? `${task.slice(0, 199)}…` : task;
  if (code) {
    return [
      { id: "s1", label: `Work out the requirements and approach for: ${topic}`, agent: "research", dependsOn: [], args: {}, tools: [] },
      { id: "s2", label: `Write the code in the workspace for: ${topic}`, agent: "code", dependsOn: ["s1"], args: {}, tools: [] },
      { id: "s3", label: "Run the code and check its output", agent: "execute", dependsOn: ["s2"], args: {}, tools: [] },
    ];
  }
  return [
    { id: "s1", label: `Gather the facts and sources needed for: ${topic}`, agent: "research", dependsOn: [], args: {}, tools: [] },
    { id: "s2", label: `Draft the answer from the findings for: ${topic}`, agent: "research", dependsOn: ["s1"], args: {}, tools: [] },
  ];
}

/**
 * The label of the work a map does once per file: "run it" → "Run each file in scripts",
 * "count its words" → "Count the words of each file in notes", "count the lines" → "Count the
 * lines of each file in data".
 */
function eachFileLabel(action: string, folder: string): string {
  const each = `each file in ${folder}`;
  if (/\b(?:it|them)\b/i.test(action)) return capitalize(action.replace(/\b(?:it|them)\b/i, each));
  if (/\b(?:its|their)\b/i.test(action)) return capitalize(`${action.replace(/\b(?:its|their)\b/i, "the")} of ${each}`);
  return capitalize(`${action} of ${each}`);
}

/**
 * The subtasks for "the same work on every file of a folder": list the folder with a direct
 * tool step (no model call), then run the work once per file, mapped over the listing's files,
 * on the agent the work needs (code runs on `code`).
 */
function mapSubtasks(intent: Extract<Intent, { kind: "map" }>, listId: string, mapId: string): PlannedSubtask[] {
  const label = eachFileLabel(intent.action || "read it", intent.folder);
  // Running each file is code work; changing files is the executor's; the rest reads.
  const work = parseClause(label, { path: `${intent.folder}/file.txt` });
  const agent = /^\s*(?:run|execute)\b/i.test(label) ? "code" : work.kind === "delete" ? "cleanup" : work.kind === "copy" || work.kind === "move" || work.kind === "write" ? "execute" : "research";
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
    // Running each file needs code_run: the plan says so (a worker that read the listing may use only the tools its plan gave it without asking).
    { id: mapId, label, agent, dependsOn: [listId], args: { path: { ref: listId, path: "$.entries[?(@.type=='file')].path" } }, mapOver: "path", reads: [intent.folder], writes: [], tools: agent === "code" ? ["code_run"] : toolsFor(work) },
  ];
}

/** The workspace paths a clause reads and writes, by the planner's rules. */
function resourcesFor(intent: Intent): { reads: string[]; writes: string[] } {
  switch (intent.kind) {
    case "write":
      return { reads: [], writes: [intent.path] };
    case "read":
    case "list":
    case "query":
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

/** Kinds whose result is a number that arithmetic on earlier results ("add them") can take. */
function isNumeric(intent: Intent): boolean {
  return intent.kind === "compute" || intent.kind === "count" || (intent.kind === "query" && intent.question.count);
}

/** Kinds whose result is a value a later clause can take ("save it", "save both"); files written are not. */
function producesValue(intent: Intent): boolean {
  return !["write", "copy", "move", "delete", "remember", "forget"].includes(intent.kind);
}

/** Literal text as an answer template keeps it: braces doubled, so they are not placeholders. */
function literal(text: string): string {
  return text.replace(/[{}]/g, (brace) => brace + brace);
}

/** A placeholder for a produced value in an answer template: the step, and for a map the outputs of its items that succeeded. */
function placeholder(produced: Produced): string {
  return produced.mapped ? `{${produced.id}${SUCCESSFUL_OUTPUTS.slice(1)}}` : `{${produced.id}}`;
}

/** The plan as it is built, clause by clause, and what later clauses can refer to. */
class PlanBuilder {
  readonly subtasks: PlannedSubtask[] = [];
  /** The answer's lines in the task's words, one per clause, while every subtask is a direct step; undefined once one is not. */
  answerLines: string[] | undefined = [];
  /** The latest value ("save it"), the values since the last combination ("save both"), the numbers among them ("add them"). */
  latest: Produced | undefined;
  values: Produced[] = [];
  numbers: Produced[] = [];
  /** The file the latest clause wrote, which "count its words" is about. */
  lastWritten: string | undefined;
  /** Direct reads of a file, reused by later questions about it while nothing writes it. */
  readonly reads = new Map<string, string>();

  constructor(readonly usable: (tool: string) => boolean = () => true) {}

  nextId(): string {
    return `s${this.subtasks.length + 1}`;
  }

  add(subtask: Omit<PlannedSubtask, "id" | "dependsOn">, line?: string): string {
    const id = this.nextId();
    // A worker's result, or a direct step the answer cannot word, leaves the answer to the synthesizer.
    // Each line as the offline synthesizer writes one: the clause, then what its step did, the values filled in.
    if (subtask.tool === undefined || (line === undefined && subtask.tool !== "thread_result")) this.answerLines = undefined;
    else if (line !== undefined) this.answerLines?.push(`${literal(subtask.label)}: ${line.replaceAll("{#", `{${id}`)}`);
    const dependsOn = [...new Set(Object.values(subtask.args).flatMap((arg) => ("ref" in arg ? [arg.ref] : [])))];
    this.subtasks.push({ id, ...subtask, dependsOn });
    for (const path of subtask.writes ?? []) this.reads.delete(path);
    return id;
  }

  /** Records a new value; a number replaces the numbers it was computed from. */
  produced(produced: Produced, numeric: boolean, consumed: Produced[] = []): void {
    const gone = new Set(consumed.map((entry) => entry.id));
    this.latest = produced;
    this.values = [...this.values.filter((entry) => !gone.has(entry.id)), produced];
    this.numbers = numeric ? [...this.numbers.filter((entry) => !gone.has(entry.id)), produced] : this.numbers;
  }

  /** A direct read of a file (no model): its content is `$.content` of the step's result. */
  readStep(path: string): string {
    const known = this.reads.get(path);
    if (known) return known;
    const id = this.add({ label: `Read ${path}`, agent: "research", tool: "file_read", args: { path: { value: path } }, reads: [path], writes: [] });
    this.reads.set(path, id);
    return id;
  }

  /** A computation over earlier results, its template bound to them by reference; undefined when there are too few. */
  compute(label: string, chained: Chained): Produced | undefined {
    const operands = this.operands(chained);
    if (!operands) return undefined;
    const expression = operands.length === 1 && operands[0]?.mapped ? overList(chained) : expandOperands(chained, operands.length);
    if (expression === undefined) return undefined;
    // A direct calculator step: the template's {a}, {b} become variables bound to the operands by reference.
    const direct = this.usable("calculator");
    const args: Record<string, SubtaskArg> = { expression: { value: direct ? expression.replace(/\{([a-z])\}/g, (_whole, name: string) => variableName(name)) : expression } };
    operands.forEach((operand, index) => {
      args[direct ? variableName(operandName(index)) : operandName(index)] = refTo(operand);
    });
    // The computation in the task's words: the operands' values where its variables are ("32 + 25 = 57").
    const worded = `${literal(expression).replace(/\{\{([a-z])\}\}/g, (_whole, name: string) => placeholder(operands[name.charCodeAt(0) - 97] as Produced))} = {#}`;
    const produced = { id: this.add({ label, agent: "execute", args, reads: [], writes: [], ...(direct ? { tool: "calculator" } : { tools: ["calculator"] }) }, worded), mapped: false };
    this.produced(produced, true, operands);
    return produced;
  }

  operands(chained: Chained): Produced[] | undefined {
    const { kind } = chained.operands;
    // "double it": the value just before, whatever produced it.
    if (kind === "previous") return this.latest ? [this.latest] : undefined;
    // "count the lines of each file in data, then add them": the figures of a map's items.
    if (this.numbers.length < 2 && kind === "all" && this.latest?.mapped && this.latest.figures) return [this.latest];
    if (this.numbers.length < 2) return undefined;
    return kind === "pair" ? this.numbers.slice(-2) : [...this.numbers];
  }
}

const AGGREGATE_WORDS = { avg: "average", sum: "total", max: "maximum", min: "minimum" } as const;

/** Adds the subtasks of one clause; false when the clause refers to results the plan does not have. */
function addIntent(plan: PlanBuilder, intent: Intent): boolean {
  const resources = resourcesFor(intent);
  switch (intent.kind) {
    case "map": {
      const [list, each] = mapSubtasks(intent, plan.nextId(), `s${plan.subtasks.length + 2}`) as [PlannedSubtask, PlannedSubtask];
      plan.subtasks.push(list, each);
      plan.answerLines = undefined;
      plan.produced({ id: each.id, mapped: true, figures: parseClause(each.label, { path: "item.txt" }).kind === "count" }, false);
      plan.lastWritten = undefined;
      return true;
    }
    case "query": {
      // The file is read by a direct step; its content goes to the question by reference, exactly.
      const read = plan.readStep(intent.path);
      const id = plan.add({ label: capitalize(intent.clause), agent: "research", args: { text: { ref: read, path: "$.content" } }, reads: [], writes: [], tools: ["json"] });
      plan.produced({ id, mapped: false }, intent.question.count);
      const aggregate = intent.question.aggregate;
      if (aggregate) plan.compute(`Compute the ${AGGREGATE_WORDS[aggregate]} of the values found by ${id}`, { expression: `${aggregate}({a})`, operands: { kind: "previous" } });
      plan.lastWritten = undefined;
      return true;
    }
    case "json":
      if ("path" in intent.source) {
        const read = plan.readStep(intent.source.path);
        const id = plan.add({ label: capitalize(intent.clause), agent: "execute", args: { text: { ref: read, path: "$.content" } }, reads: [], writes: [], tools: ["json"] });
        plan.produced({ id, mapped: false }, false);
        plan.lastWritten = undefined;
        return true;
      }
      break;
    case "compute":
      if (intent.chained) {
        const produced = plan.compute(capitalize(intent.clause), intent.chained);
        plan.lastWritten = undefined;
        return produced !== undefined;
      }
      break;
    case "write": {
      if (intent.content === undefined && intent.usesPrevious) {
        // "save the total to t.txt" after two numbers: the total is computed first, then saved.
        const noun = combinationNoun(intent.clause);
        if (noun && noun.operands.kind !== "previous" && plan.numbers.length >= 2) {
          const names = plan.numbers.slice(noun.operands.kind === "pair" ? -2 : 0).map((entry) => entry.id);
          plan.compute(`Compute the ${/\bthe (\w+)/i.exec(intent.clause)?.[1]?.toLowerCase() ?? "result"} of the results of ${names.join(" and ")}`, noun);
        } else if (intent.several && plan.values.length >= 2) {
          // "save both to f.txt": every value since the last combination, one per line.
          const args: Record<string, SubtaskArg> = { path: { value: intent.path }, template: { value: plan.values.map((_, index) => `{${operandName(index)}}`).join("\n") } };
          plan.values.forEach((value, index) => {
            args[operandName(index)] = refTo(value);
          });
          plan.add({ label: capitalize(intent.clause), agent: "execute", args, ...resources, tools: ["file_write", "file_append"] });
          plan.lastWritten = intent.path;
          return true;
        }
      }
      break;
    }
    case "remember":
      // Nothing to decide: the fact goes to long-term memory by a direct step.
      plan.add({ label: capitalize(intent.clause), agent: "memory", tool: "memory_save", args: argsFor(intent, undefined), reads: [], writes: [] }, "remembered {#.id}: {#.text}");
      plan.lastWritten = undefined;
      return true;
    case "previous":
      // "what was the result?": the latest value is the answer; nothing more to do.
      if (plan.latest !== undefined) plan.answerLines?.push(`${literal(capitalize(intent.clause))}: ${placeholder(plan.latest)}`);
      return plan.latest !== undefined;
    default:
      break;
  }
  // "count its words" right after a write: the file just written.
  const resolved = intent.kind === "count" && intent.path === undefined && plan.lastWritten !== undefined ? { ...intent, path: plan.lastWritten } : intent;
  if (resolved.usesPrevious && resolved.kind !== "open" && !plan.latest) return false;
  const args = argsFor(resolved, resolved.usesPrevious ? plan.latest : undefined);
  const tool = directTool(resolved, resolved.usesPrevious ? plan.latest : undefined, plan.numbers, plan.usable);
  const id = plan.add({ label: capitalize(resolved.clause), agent: agentFor(resolved), args, ...resourcesFor(resolved), ...(tool !== undefined ? { tool } : { tools: toolsFor(resolved) }) }, answerLine(resolved));
  const last = plan.subtasks.at(-1);
  if (resolved.kind === "open" && resolved.usesPrevious && plan.latest && last) last.dependsOn = [...new Set([...last.dependsOn, plan.latest.id])];
  if (producesValue(resolved)) plan.produced({ id, mapped: false }, isNumeric(resolved));
  plan.lastWritten = resolved.kind === "write" ? resolved.path : resolved.kind === "copy" || resolved.kind === "move" ? resolved.to : undefined;
  return true;
}

/** What a direct step did, for its line of the answer ("17% of 2,340 = {#}", "wrote result.txt ({#.bytes} bytes)"); `{#}` is the step's own result. */
function answerLine(intent: Intent): string | undefined {
  switch (intent.kind) {
    case "compute":
      return `${literal(intent.expression)} = {#}`;
    case "write":
      return `wrote ${literal(intent.path)} ({#.bytes} bytes)`;
    default:
      return undefined;
  }
}

/**
 * The offline planner: one subtask per recognised clause (two for work on every file of a
 * folder or a question about a JSON file: a direct step that lists or reads, then the work),
 * chained where a clause refers back ("save it", "double it", "add them", "save both"),
 * independent otherwise so they run in parallel — except where clauses use the same workspace
 * path: each subtask declares the paths it reads and writes, and those that share one run in
 * the order the task gives them. A clause that refers to results the task has not produced is
 * left for a language model.
 */
export function planTask(task: string, context: PlanContext = {}): PlanOutput {
  const earlier = new EarlierTurns(context.history);
  const usable = (tool: string): boolean => context.tools?.includes(tool) ?? true;
  // Memory clauses need the memory tools; without them they are work for a language model.
  const readable = (text: string): Intent[] =>
    parseTask(earlier.resolveFiles(text)).map((intent): Intent => {
      const tool = intent.kind === "remember" ? "memory_save" : intent.kind === "recall" ? "memory_search" : intent.kind === "forget" ? "memory_forget" : undefined;
      return tool !== undefined && !usable(tool) ? { kind: "open", clause: intent.clause, agent: "research", usesPrevious: false } : intent;
    });
  let intents = readable(task);
  // A person's feedback on a rejected plan: the clauses it keeps, leaves out or adds.
  if ((context.feedback ?? []).length > 0) {
    const reading = applyFeedback(intents, context.feedback ?? []);
    if (reading.understood) {
      intents = [...reading.keep, ...reading.additions.flatMap(readable)];
      if (intents.length === 0) return { subtasks: [], question: "With that feedback nothing of the task is left to do. What should be done?" };
    }
  }
  if (intents.length === 0) return { subtasks: [], question: "The task has no words I can act on. What should be done?" };
  if (intents.every((intent) => intent.kind === "open")) return { subtasks: openEndedPlan(task, intents) };
  const plan = new PlanBuilder(usable);
  for (const intent of intents) {
    if (plan.subtasks.length >= 47) break;
    // A clause that refers back before the task has produced anything refers to the conversation.
    if (plan.values.length === 0 && !earlier.empty && usable("thread_result")) takeEarlier(plan, earlier, intent);
    if (!addIntent(plan, intent)) addIntent(plan, { kind: "open", clause: intent.clause, agent: "research", usesPrevious: false });
  }
  const subtasks = orderByResources(plan.subtasks, () => undefined, { followListOrder: true }).subtasks;
  const lines = plan.answerLines;
  // Every step direct and worded: the answer is known but for the results, and code fills them in (no synthesizer call).
  if (lines === undefined || lines.length === 0) return { subtasks };
  return { subtasks, answer: [literal(OFFLINE_NOTICE), "", ...lines.map((line) => `- ${line}`)].join("\n") };
}

/** What the offline planner knows besides the task: the thread's earlier turns, and the tools it may plan with. */
export interface PlanContext {
  history?: ConversationView;
  /** The tools named in the planner's prompt; absent: every tool is assumed. */
  tools?: readonly string[];
  /** A person's feedback on an earlier plan (src/providers/offline/feedback-rules.ts). */
  feedback?: readonly string[];
}

/**
 * Adds `thread_result` steps for the earlier values a clause refers to ("save it", "double it",
 * "add them", "save both", "the total"), as the values the plan has produced so far.
 */
function takeEarlier(plan: PlanBuilder, earlier: EarlierTurns, intent: Intent): void {
  const need = EarlierTurns.need(intent, intent.kind === "write" && combinationNoun(intent.clause)?.operands.kind !== undefined && combinationNoun(intent.clause)?.operands.kind !== "previous");
  if (need === undefined) return;
  const chosen: EarlierResult[] = need === "latest" ? [earlier.latest()].filter((entry): entry is EarlierResult => entry !== undefined) : need === "values" ? earlier.values() : earlier.numbers();
  if (chosen.length === 0 || (need !== "latest" && chosen.length < 2)) return;
  for (const { turn, result } of chosen) {
    // A result that was itself taken from an earlier turn keeps the name of what made it.
    const named = /^Take the result of "(.*)" from turn \d+$/.exec(result.label)?.[1] ?? result.label;
    const id = plan.add({
      label: `Take the result of "${named}" from turn ${turn}`,
      agent: "research",
      tool: "thread_result",
      args: { handle: { value: result.handle } },
      reads: [],
      writes: [],
    });
    plan.produced({ id, mapped: false }, result.shape === "number");
  }
}
