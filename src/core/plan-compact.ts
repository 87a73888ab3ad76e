import { Cursor, isSpace, LineError, MAX_LITERAL_DEPTH } from "./compact-cursor.js";
import { FORMAT_MAX_CHARS } from "./ref-format.js";
import { isArgRef, type PlannedSubtask, type PlanOutput, type SubtaskArg } from "./plan.js";
import { callLabel, compactArg, compactName, type PlanReadContext, referencedIds } from "./plan-read.js";

/**
 * The compact plan wire: a plan as text, one step a line, in a small call syntax — what a model
 * writes in a fraction of the JSON plan's tokens (LLMCompiler's planners write `2. search("Paris")`):
 *
 *   s1 = lookup_price(item: "widget")
 *   s2 = calculator(expression: "price * 3", price: $s1.price)
 *   s3 = @research("Find reviews of the widget", product: $s1.item) tools=[web_search]
 *   answer: Three widgets cost {s2}.
 *
 * - `id = tool(name: value, …)` runs a tool directly (no model); `id = @agent("instruction",
 *   name: value, …)` is a worker's subtask. Values are JSON, or `$id` / `$id.path` (JSONPath
 *   after `$`) for an earlier step's result; `each` before a list runs the step once per item;
 *   `as "{item}: {price}"` after a reference makes it text, a line per item.
 * - After the call: `tools=[…]`, `after=[…]` (waits without taking a result), `reads=[…]`,
 *   `writes=[…]`, `agent=name`, `capability=name`; `# text` labels a tool step.
 * - `answer: …` the answer template (src/core/answer-template.ts), several lines joined, or a
 *   JSON string; `question: …` a question for the person instead of steps.
 * - Blank lines, `#` comments, code fences and prose lines are skipped; a line that starts like a
 *   step (`name =`) and does not read as one is an error, with its line number.
 *
 * Reading is one pass over each line with a cursor (no regular expression scans a whole line),
 * bounded in line length, lines and characters, and checked on every streamed prefix.
 */

export const COMPACT_LIMITS = {
  /** Characters of one line. */
  lineChars: 8_000,
  /** Lines of a plan, blank and prose ones included. */
  lines: 400,
  /** Characters of a whole plan. */
  chars: 200_000,
  /** Nesting of a JSON literal. */
  depth: MAX_LITERAL_DEPTH,
} as const;

/** What one line of a plan is. */
export type CompactLine = { step: PlannedSubtask } | { answer: string } | { question: string } | { skipped: true } | { error: string };

const OPTIONS = new Set(["agent", "tools", "after", "reads", "writes", "capability"]);

/** An argument's value: a literal or a reference, `each` before it, `as "format"` after a reference. */
function readValue(cursor: Cursor): { arg: SubtaskArg; each: boolean } {
  cursor.skipSpace();
  let each = false;
  if (cursor.text.startsWith("each", cursor.position) && isSpace(cursor.peek(4))) {
    each = true;
    cursor.position += 4;
    cursor.skipSpace();
  }
  if (cursor.peek() !== "$") return { arg: { value: cursor.literal() }, each };
  const { ref, path } = cursor.reference();
  cursor.skipSpace();
  if (cursor.text.startsWith("as", cursor.position) && (isSpace(cursor.peek(2)) || cursor.peek(2) === '"')) {
    cursor.position += 2;
    const format = cursor.string();
    if (format.length > FORMAT_MAX_CHARS) cursor.fail(`a format is at most ${FORMAT_MAX_CHARS} characters`);
    return { arg: { ref, path, format }, each };
  }
  return { arg: { ref, path }, each };
}

/** A list option's names: `[a, "b.txt"]` or one bare name. */
function readNames(cursor: Cursor): string[] {
  cursor.skipSpace();
  const one = (): string => {
    cursor.skipSpace();
    if (cursor.peek() === '"') return cursor.string();
    return cursor.identifier() ?? cursor.fail("expected a name or text in double quotes");
  };
  if (cursor.peek() !== "[") return [one()];
  cursor.position += 1;
  const names: string[] = [];
  cursor.skipSpace();
  if (cursor.peek() === "]") {
    cursor.position += 1;
    return names;
  }
  for (;;) {
    names.push(one());
    cursor.skipSpace();
    if (cursor.peek() === ",") {
      cursor.position += 1;
      continue;
    }
    cursor.expect("]", "] to close the list");
    return names;
  }
}

/** Where a line's step text starts: after indentation and a list marker (`1.`, `2)`, `-`, `*`). */
function stepStart(line: string): number {
  let position = 0;
  while (isSpace(line[position])) position += 1;
  const marker = position;
  while (line[position] !== undefined && (line[position] as string) >= "0" && (line[position] as string) <= "9") position += 1;
  if (position > marker && (line[position] === "." || line[position] === ")") && isSpace(line[position + 1])) return position + 1;
  position = marker;
  if ((line[position] === "-" || line[position] === "*") && isSpace(line[position + 1])) return position + 1;
  return marker;
}

/** Whether a line starts like a step: a name, then `=` (not `==`). */
function looksLikeStep(line: string, start: number): boolean {
  const cursor: Cursor = new Cursor(line);
  cursor.position = start;
  if (cursor.identifier() === undefined) return false;
  cursor.skipSpace();
  return cursor.peek() === "=" && cursor.peek(1) !== "=";
}

/** The keyword of an `answer:` or `question:` line, and where its text starts. */
function keywordLine(line: string, start: number): { keyword: "answer" | "question"; rest: string } | undefined {
  for (const keyword of ["answer", "question"] as const) {
    const head = line.slice(start, start + keyword.length);
    if (head.toLowerCase() !== keyword) continue;
    let position = start + keyword.length;
    while (isSpace(line[position])) position += 1;
    if (line[position] !== ":") continue;
    const rest = line.slice(position + 1).trim();
    if (rest.startsWith('"') && rest.endsWith('"') && rest.length >= 2) {
      try {
        const decoded = JSON.parse(rest) as unknown;
        if (typeof decoded === "string") return { keyword, rest: decoded };
      } catch {
        // not a JSON string after all: the text as written
      }
    }
    return { keyword, rest };
  }
  return undefined;
}

/** One line of a plan read: a step, the answer or question, a skipped line, or what is wrong with it. */
export function readCompactLine(line: string, context: PlanReadContext): CompactLine {
  if (line.length > COMPACT_LIMITS.lineChars) return { error: `the line is longer than ${COMPACT_LIMITS.lineChars} characters` };
  const start = stepStart(line);
  const trimmed = line.slice(start).trim();
  if (trimmed === "" || trimmed.startsWith("#") || trimmed.startsWith("//") || trimmed.startsWith("```")) return { skipped: true };
  const keyword = keywordLine(line, start);
  if (keyword) return keyword.keyword === "answer" ? { answer: keyword.rest } : { question: keyword.rest };
  if (!looksLikeStep(line, start)) return { skipped: true };
  try {
    return { step: readStep(line, start, context) };
  } catch (error) {
    if (error instanceof LineError) return { error: error.message };
    throw error;
  }
}

function readStep(line: string, start: number, context: PlanReadContext): PlannedSubtask {
  const cursor: Cursor = new Cursor(line);
  cursor.position = start;
  const id = cursor.identifier() as string;
  if (id.length > 64) cursor.fail("a step id is at most 64 characters");
  if (id.includes(".")) cursor.fail("a step id has no dot ($s1.field reads a field of s1)");
  cursor.expect("=", "=");
  cursor.skipSpace();
  const callStart = cursor.position;
  const worker = cursor.peek() === "@";
  if (worker) cursor.position += 1;
  const callee = cursor.identifier();
  if (callee === undefined) cursor.fail(`expected a tool (tool(…)) or a worker (@agent("instruction", …)) after ${id} =`);
  // A worker named without its @ is still a worker: an agent's name that is not a tool's.
  const isWorker = worker || (context.agents.includes(callee) && !context.tools.includes(callee));
  cursor.expect("(", `( after ${callee}`);
  const args: Record<string, SubtaskArg> = {};
  let label: string | undefined;
  let mapOver: string | undefined;
  let positional = 0;
  cursor.skipSpace();
  if (cursor.peek() === ")") cursor.position += 1;
  else {
    for (;;) {
      cursor.skipSpace();
      const save = cursor.position;
      let name: string | undefined;
      let instruction = false;
      if (cursor.peek() === '"') {
        const text = cursor.string();
        cursor.skipSpace();
        if (cursor.peek() === ":" || (cursor.peek() === "=" && cursor.peek(1) !== "=")) {
          name = text;
          cursor.position += 1;
        } else if (isWorker && label === undefined && Object.keys(args).length === 0) {
          label = text;
          instruction = true;
        } else cursor.position = save;
      } else {
        const word = cursor.identifier();
        cursor.skipSpace();
        if (word !== undefined && (cursor.peek() === ":" || (cursor.peek() === "=" && cursor.peek(1) !== "="))) {
          name = word;
          cursor.position += 1;
        } else cursor.position = save;
      }
      if (!instruction) {
        if (name === undefined) {
          // A tool's argument without a name: the tool's parameters in the order its schema lists them.
          const next = isWorker ? undefined : context.parametersOf?.(callee)?.[positional];
          if (next === undefined) cursor.fail(isWorker ? "a worker step starts with its instruction in double quotes, then named arguments (name: value)" : "arguments are named (name: value)");
          name = next;
          positional += 1;
        }
        if (name === "" || name.length > 64) cursor.fail("an argument's name is 1 to 64 characters");
        if (Object.hasOwn(args, name)) cursor.fail(`the argument ${name} is given twice`);
        const { arg, each } = readValue(cursor);
        args[name] = arg;
        if (each) {
          if (mapOver !== undefined) cursor.fail(`the step runs over ${mapOver} already; it runs over one list at most`);
          if (!isArgRef(arg) && !Array.isArray(arg.value)) cursor.fail(`each is followed by a list or a result (${name}: each $s1.items)`);
          mapOver = name;
        }
      }
      cursor.skipSpace();
      if (cursor.peek() === ",") {
        cursor.position += 1;
        cursor.skipSpace();
        if (cursor.peek() === ")") {
          cursor.position += 1;
          break;
        }
        continue;
      }
      cursor.expect(")", ') or , after an argument (text is written in double quotes: "2 + 2")');
      break;
    }
  }
  const call = line.slice(callStart, cursor.position);
  const options: Partial<Record<string, string[]>> = {};
  let comment: string | undefined;
  for (;;) {
    cursor.skipSpace();
    if (cursor.position >= line.length) break;
    if (cursor.peek() === "#" || (cursor.peek() === "/" && cursor.peek(1) === "/")) {
      comment = line.slice(cursor.position + (cursor.peek() === "#" ? 1 : 2)).trim();
      break;
    }
    const option = cursor.identifier();
    if (option === undefined || !OPTIONS.has(option)) cursor.fail(`after the call come options ${[...OPTIONS].map((name) => `${name}=`).join(", ")} or a # comment`);
    cursor.expect("=", `= after ${option}`);
    if (options[option] !== undefined) cursor.fail(`${option} is given twice`);
    options[option] = readNames(cursor);
  }
  const single = (name: string): string | undefined => {
    const values = options[name];
    if (values === undefined) return undefined;
    if (values.length !== 1) cursor.fail(`${name}= takes one name`);
    return values[0];
  };
  const agent = single("agent");
  const capability = single("capability");
  if (isWorker && label === undefined) cursor.fail(`a worker step starts with its instruction in double quotes: ${id} = @${callee}("what to do", …)`);
  if (isWorker && label !== undefined && label.trim() === "") cursor.fail("a worker's instruction is empty");
  const dependsOn = [...new Set([...referencedIds(args), ...(options.after ?? [])])];
  const subtask: PlannedSubtask = isWorker
    ? { id, label: (label as string).slice(0, 500), agent: callee, dependsOn, args }
    : { id, label: (comment || (call.length <= 200 ? call : callLabel(callee, args, mapOver))).slice(0, 500), agent: agent ?? context.agentFor(callee), dependsOn, args, tool: callee };
  if (isWorker && agent !== undefined) cursor.fail("a worker step names its agent after @; agent= is for tool steps");
  if (mapOver !== undefined) subtask.mapOver = mapOver;
  if (options.reads !== undefined && options.reads.length > 0) subtask.reads = options.reads;
  if (options.writes !== undefined && options.writes.length > 0) subtask.writes = options.writes;
  if (options.tools !== undefined) {
    if (!isWorker) cursor.fail("tools= is for a worker step; a tool step runs its own tool");
    subtask.tools = [...new Set(options.tools)];
  }
  if (capability !== undefined) subtask.capability = capability;
  return subtask;
}

/**
 * A compact plan read as it streams in: each step is handed over when its line is complete. The
 * limits hold on every prefix: a line, the lines or the characters past theirs stop the reading
 * with the reason (`problem`), as does the first line that does not read.
 */
export class CompactPlanReader {
  readonly #context: PlanReadContext;
  #partial = "";
  #chars = 0;
  #line = 0;
  readonly steps: PlannedSubtask[] = [];
  readonly answer: string[] = [];
  readonly question: string[] = [];
  readonly errors: string[] = [];
  /** Set when a limit stops the reading: nothing after it is read. */
  problem: string | undefined;

  constructor(context: PlanReadContext) {
    this.#context = context;
  }

  /** Adds streamed text; returns the steps its complete lines hold. */
  push(text: string): PlannedSubtask[] {
    if (this.problem !== undefined) return [];
    this.#chars += text.length;
    if (this.#chars > COMPACT_LIMITS.chars) {
      this.problem = `the plan is longer than ${COMPACT_LIMITS.chars} characters`;
      return [];
    }
    const found: PlannedSubtask[] = [];
    let from = 0;
    for (let newline = text.indexOf("\n"); newline >= 0; newline = text.indexOf("\n", from)) {
      const step = this.#take(this.#partial + text.slice(from, newline));
      this.#partial = "";
      from = newline + 1;
      if (step) found.push(step);
      if (this.problem !== undefined) return found;
    }
    this.#partial += text.slice(from);
    if (this.#partial.length > COMPACT_LIMITS.lineChars) this.problem = `line ${this.#line + 1} is longer than ${COMPACT_LIMITS.lineChars} characters`;
    return found;
  }

  /** The end of the text: the last line, if it had no newline. */
  end(): PlannedSubtask[] {
    if (this.problem !== undefined || this.#partial === "") return [];
    const step = this.#take(this.#partial);
    this.#partial = "";
    return step ? [step] : [];
  }

  #take(line: string): PlannedSubtask | undefined {
    this.#line += 1;
    if (this.#line > COMPACT_LIMITS.lines) {
      this.problem = `the plan has more than ${COMPACT_LIMITS.lines} lines`;
      return undefined;
    }
    const read = readCompactLine(line, this.#context);
    if ("error" in read) {
      this.errors.push(`line ${this.#line}: ${read.error}`);
      return undefined;
    }
    if ("answer" in read) this.answer.push(read.answer);
    else if ("question" in read) this.question.push(read.question);
    else if ("step" in read) {
      this.steps.push(read.step);
      return read.step;
    }
    return undefined;
  }

  /** The whole plan once the text has ended, or every reason it does not read. */
  result(): { success: true; data: PlanOutput } | { success: false; error: string } {
    this.end();
    if (this.problem !== undefined) return { success: false, error: this.problem };
    if (this.errors.length > 0) return { success: false, error: this.errors.slice(0, 20).join("\n") };
    const question = this.question.join(" ").trim();
    if (this.steps.length === 0 && question === "") {
      return { success: false, error: 'the answer held no step: write one step a line (s1 = tool(name: value) or s1 = @agent("instruction", …)), or question: … to ask the person' };
    }
    const answer = this.answer.join("\n").trim();
    return { success: true, data: { subtasks: this.steps, ...(question !== "" ? { question } : {}), ...(answer !== "" ? { answer } : {}) } };
  }
}

/** A whole compact plan read (see CompactPlanReader). */
export function readCompactPlan(text: string, context: PlanReadContext): { success: true; data: PlanOutput } | { success: false; error: string } {
  const reader = new CompactPlanReader(context);
  reader.push(text);
  return reader.result();
}

/** A plan written on the compact wire (what the offline model and the benchmark's oracle answer). */
export function writeCompactPlan(plan: PlanOutput, context: Pick<PlanReadContext, "agentFor">): string {
  const lines = plan.subtasks.map((subtask) => {
    const refs = new Set(referencedIds(subtask.args));
    const after = subtask.dependsOn.filter((id) => !refs.has(id));
    const args = Object.entries(subtask.args).map(([name, arg]) => `${compactName(name)}: ${compactArg(arg, name === subtask.mapOver)}`);
    const options: string[] = [];
    const list = (names: readonly string[]) => `[${names.map((name) => (/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name) ? name : JSON.stringify(name))).join(", ")}]`;
    let text: string;
    if (subtask.tool !== undefined) {
      text = `${subtask.id} = ${subtask.tool}(${args.join(", ")})`;
      if (subtask.agent !== context.agentFor(subtask.tool)) options.push(`agent=${subtask.agent}`);
    } else {
      text = `${subtask.id} = @${subtask.agent}(${[JSON.stringify(subtask.label), ...args].join(", ")})`;
      if (subtask.tools !== undefined) options.push(`tools=${list(subtask.tools)}`);
      if ((subtask.reads ?? []).length > 0) options.push(`reads=${list(subtask.reads ?? [])}`);
      if ((subtask.writes ?? []).length > 0) options.push(`writes=${list(subtask.writes ?? [])}`);
    }
    if (after.length > 0) options.push(`after=${list(after)}`);
    if (subtask.capability !== undefined) options.push(`capability=${subtask.capability}`);
    const labelled = subtask.tool !== undefined && subtask.label !== text.slice(subtask.id.length + 3) ? ` # ${subtask.label.replace(/\n/g, " ")}` : "";
    return `${text}${options.map((option) => ` ${option}`).join("")}${labelled}`;
  });
  if (plan.answer !== undefined) lines.push(`answer: ${/[\n"]/.test(plan.answer) || plan.answer !== plan.answer.trim() ? JSON.stringify(plan.answer) : plan.answer}`);
  if (plan.question !== undefined) lines.push(`question: ${plan.question.includes("\n") ? JSON.stringify(plan.question) : plan.question}`);
  return lines.join("\n");
}

