import { describe, expect, it } from "vitest";
import { COMPACT_LIMITS, CompactPlanReader, readCompactLine, readCompactPlan, writeCompactPlan } from "./plan-compact.js";
import type { PlanOutput } from "./plan.js";
import { planReadContext } from "./plan-read.js";

const context = planReadContext(
  [
    { name: "research", tools: ["web_search", "file_read", "calculator"] },
    { name: "execute", tools: ["calculator", "file_write", "file_list"] },
  ],
  ["web_search", "file_read", "calculator", "file_write", "file_list", "board_post"],
  (tool) => (tool === "calculator" ? ["expression", "vars"] : tool === "file_write" ? ["path", "content"] : []),
);

function plan(text: string): PlanOutput {
  const read = readCompactPlan(text, context);
  if (!read.success) throw new Error(read.error);
  return read.data;
}

function errorOf(text: string): string {
  const read = readCompactPlan(text, context);
  if (read.success) throw new Error("expected the plan to be refused");
  return read.error;
}

describe("the compact plan wire", () => {
  it("reads the README's plan: tool steps whose agent, label and dependencies code fills in, and the answer", () => {
    const read = plan('s1 = calculator(expression: "17% of 2340")\ns2 = file_write(path: "result.txt", content: $s1)\nanswer: 17% of 2,340 is {s1}; saved to result.txt');
    expect(read).toEqual({
      subtasks: [
        { id: "s1", label: 'calculator(expression: "17% of 2340")', agent: "research", dependsOn: [], args: { expression: { value: "17% of 2340" } }, tool: "calculator" },
        { id: "s2", label: 'file_write(path: "result.txt", content: $s1)', agent: "execute", dependsOn: ["s1"], args: { path: { value: "result.txt" }, content: { ref: "s1", path: "$" } }, tool: "file_write" },
      ],
      answer: "17% of 2,340 is {s1}; saved to result.txt",
    });
  });

  it("reads worker steps, options, maps, formats, JSON values and paths with brackets", () => {
    const read = plan(
      [
        's1 = file_list(path: "data", recursive: false) agent=execute # List data',
        "s2 = file_read(path: each $s1.entries[?(@.type=='file')].path)",
        's3 = @research("Summarise the files", texts: $s2.results[*].output.content, limit: {"words": 200}) tools=[web_search] reads=["data"] after=[s1] capability=summarise',
        'research = calculator(expression: "sum(x)", x: each [1, 2.5, -3])',
        's5 = file_write(path: "out.txt", content: $s3 as "{item}: {price}")',
        's6 = board_post("ok name": 1)',
      ].join("\n"),
    );
    expect(read.subtasks[0]).toEqual({ id: "s1", label: "List data", agent: "execute", dependsOn: [], args: { path: { value: "data" }, recursive: { value: false } }, tool: "file_list" });
    expect(read.subtasks[1]).toMatchObject({ dependsOn: ["s1"], mapOver: "path", args: { path: { ref: "s1", path: "$.entries[?(@.type=='file')].path" } } });
    expect(read.subtasks[2]).toEqual({
      id: "s3",
      label: "Summarise the files",
      agent: "research",
      dependsOn: ["s2", "s1"],
      args: { texts: { ref: "s2", path: "$.results[*].output.content" }, limit: { value: { words: 200 } } },
      tools: ["web_search"],
      reads: ["data"],
      capability: "summarise",
    });
    expect(read.subtasks[3]).toMatchObject({ id: "research", tool: "calculator", mapOver: "x", args: { x: { value: [1, 2.5, -3] } } });
    expect(read.subtasks[4]?.args.content).toEqual({ ref: "s3", path: "$", format: "{item}: {price}" });
    expect(read.subtasks[5]?.args).toEqual({ "ok name": { value: 1 } });
  });

  it("takes a worker named without its @, a tool's arguments in its parameters' order, and = for :", () => {
    const read = plan('s1 = research("Find the facts")\ns2 = calculator("2 + 2")\ns3 = file_write("a.txt", content = $s2)');
    expect(read.subtasks[0]).toMatchObject({ agent: "research", label: "Find the facts" });
    expect(read.subtasks[0]).not.toHaveProperty("tool");
    expect(read.subtasks[1]?.args).toEqual({ expression: { value: "2 + 2" } });
    expect(read.subtasks[2]?.args).toEqual({ path: { value: "a.txt" }, content: { ref: "s2", path: "$" } });
  });

  it("skips prose, fences, comments and list markers around the plan, and reads a question", () => {
    const read = plan('Here is the plan:\n```\n# the lookups\n1. s1 = calculator(expression: "1 + 1")\n- s2 = calculator(expression: "2 + 2")\n```\nLet me know if you need more.');
    expect(read.subtasks.map((subtask) => subtask.id)).toEqual(["s1", "s2"]);
    expect(plan("question: Which folder do you mean?")).toEqual({ subtasks: [], question: "Which folder do you mean?" });
    expect(plan('s1 = calculator(expression: "1")\nanswer: "Line one\\nline two"').answer).toBe("Line one\nline two");
    expect(plan('s1 = calculator(expression: "1")\nanswer: first {s1}\nanswer: second').answer).toBe("first {s1}\nsecond");
  });

  it("names the line and what is wrong with every step that does not read, for the repair round", () => {
    const error = errorOf(['s1 = calculator(expression: 17% of 2340)', "s2 = file_write(path: result.txt)", 's3 = @research(topic: "x")', 's4 = calculator(expression: "1") tools=[web_search]', "s5 = calculator(expression: [$s1, $s2])", 's6 = file_list(path: "a", path: "b")'].join("\n"));
    expect(error).toContain('line 1: a text value is written in double quotes ("17% of 2340")');
    expect(error).toContain('line 2: a text value is written in double quotes ("widget")');
    expect(error).toContain("line 3: a worker step starts with its instruction in double quotes");
    expect(error).toContain("line 4: tools= is for a worker step");
    expect(error).toContain("line 5: a list or object holds only JSON values; give each result its own argument");
    expect(error).toContain("line 6: the argument path is given twice");
    expect(errorOf("Sure! I will do that.")).toContain("the answer held no step");
    expect(errorOf('s1 = calculator(x: each [1], y: each [2])')).toContain("runs over one list at most");
    expect(errorOf('s1 = calculator(x: each 3)')).toContain("each is followed by a list or a result");
  });

  it("hands over each step once its line is complete, however the text is cut, and judges the whole the same", () => {
    const text = 's1 = calculator(expression: "1 + 1")\ns2 = calculator(expression: "a * 2", a: $s1)\nanswer: {s2}';
    const reader = new CompactPlanReader(context);
    const handed: Array<{ at: number; id: string }> = [];
    for (let index = 0; index < text.length; index += 1) for (const step of reader.push(text[index] as string)) handed.push({ at: index, id: step.id });
    expect(handed).toEqual([
      { at: text.indexOf("\n"), id: "s1" },
      { at: text.lastIndexOf("\n"), id: "s2" },
    ]);
    expect(reader.end()).toEqual([]);
    expect(reader.result()).toEqual(readCompactPlan(text, context));
  });

  it("holds its limits on every prefix: a line too long, too many lines, too many characters", () => {
    const long = new CompactPlanReader(context);
    long.push(`s1 = calculator(expression: "${"9".repeat(COMPACT_LIMITS.lineChars)}`);
    expect(long.problem).toContain("line 1 is longer than");
    expect(long.push('")\ns2 = calculator(expression: "1")\n')).toEqual([]);
    const many = new CompactPlanReader(context);
    many.push("# a comment\n".repeat(COMPACT_LIMITS.lines + 1));
    expect(many.problem).toContain(`more than ${COMPACT_LIMITS.lines} lines`);
    const huge = new CompactPlanReader(context);
    for (let index = 0; index < 30; index += 1) huge.push(`${"x".repeat(7_000)}\n`);
    expect(huge.problem).toContain(`longer than ${COMPACT_LIMITS.chars} characters`);
    expect(huge.result()).toEqual({ success: false, error: expect.stringContaining("longer than") });
  });

  it("reads hostile lines to an error, never a crash: deep nesting, unclosed quotes and brackets, a path that never ends", () => {
    expect(readCompactLine(`s1 = calculator(x: ${"[".repeat(5_000)})`, context)).toEqual({ error: expect.stringContaining("nested deeper than") });
    expect(readCompactLine('s1 = calculator(expression: "never closed)', context)).toEqual({ error: expect.stringContaining("not closed") });
    expect(readCompactLine(`s1 = calculator(x: $s0${"[".repeat(3_000)}`, context)).toEqual({ error: expect.stringContaining("expected )") });
    expect(readCompactLine(`s1 = calculator(x: {"a": ${"1,".repeat(2_000)}`, context)).toEqual({ error: expect.stringContaining("not closed") });
    expect(readCompactLine("s1.x = calculator()", context)).toEqual({ error: expect.stringContaining("a step id has no dot") });
  });

  it("round-trips what troupe writes on it: a plan with every option, and the offline model's", () => {
    const agentFor = context.agentFor;
    const original: PlanOutput = {
      subtasks: [
        { id: "s1", label: "List data", agent: "execute", dependsOn: [], args: { path: { value: "data" } }, tool: "file_list" },
        { id: "s2", label: 'Say "hi"', agent: "research", dependsOn: ["s1"], args: { files: { ref: "s1", path: "$.entries[*].path", format: "{}" }, "odd name": { value: { a: [1] } } }, tools: [], reads: ["data"], writes: ["out dir/x.txt"], capability: "summarise" },
        { id: "s3", label: "calculator(expression: \"1\")", agent: "research", dependsOn: ["s2"], args: { expression: { value: "1" } }, tool: "calculator" },
      ],
      answer: "Done: {s3}\nand {{braces}}",
    };
    const written = writeCompactPlan(original, { agentFor });
    expect(written.split("\n")[2]).toBe('s3 = calculator(expression: "1") after=[s2]');
    expect(plan(written)).toEqual(original);
  });
});
