import type { AIMessage} from "@langchain/core/messages";
import { HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { BUILTIN_AGENTS, validatePlan } from "../../core/plan.js";
import { readCompactPlan } from "../../core/plan-compact.js";
import { planReadContext } from "../../core/plan-read.js";
import { fromPlanWire, type PlanWire, planWireSchema } from "../../core/plan-wire.js";
import { roleLine, SECTIONS, section, STRUCTURED_OUTPUT } from "../../core/prompt-protocol.js";
import { parseTask, splitClauses } from "./intents.js";
import { OfflineChatModel } from "./offline-chat-model.js";
import { planTask } from "./planner-rules.js";
import { workerStep } from "./worker-rules.js";
import { reviewOutcomes } from "./review-rules.js";
import { synthesize } from "./synthesis-rules.js";
import { toVerdict } from "../../core/review.js";

describe("reading a task", () => {
  it("splits clauses at then/and-before-a-verb/sentence ends, but not inside quotes, JSON or file names", () => {
    expect(splitClauses("compute 17% of 2,340 and save it to result.txt")).toEqual(["compute 17% of 2,340", "save it to result.txt"]);
    expect(splitClauses('Write "salt and pepper. Then rest" to a.txt, then list the files')).toEqual(['Write "salt and pepper. Then rest" to a.txt', "list the files"]);
    expect(splitClauses('validate the JSON {"a": "x. y", "b": [1, 2]} and read b.json')).toEqual(['validate the JSON {"a": "x. y", "b": [1, 2]}', "read b.json"]);
    expect(splitClauses("add 2 and 3")).toEqual(["add 2 and 3"]);
  });

  it("recognises arithmetic, files and JSON, and leaves the rest to a language model", () => {
    const kinds = (task: string) => parseTask(task).map((intent) => intent.kind);
    expect(kinds("What is the square root of 144 plus 10?")).toEqual(["compute"]);
    expect(kinds("Read notes.txt and list the files in data")).toEqual(["read", "list"]);
    expect(kinds("Check whether config.json is valid JSON")).toEqual(["json"]);
    expect(kinds("Write a Python scraper for a news site")).toEqual(["open"]);
    expect(parseTask("Write a Python scraper for a news site")[0]).toMatchObject({ agent: "code" });
    expect(parseTask("Explain the causes of the French revolution")[0]).toMatchObject({ kind: "open", agent: "research" });
  });
});

describe("offline planner", () => {
  it("plans a literal calculation and the write of its number as direct steps, the second taking the first one's result", () => {
    const plan = planTask("compute 17% of 2,340 and save it to result.txt");
    expect(plan.subtasks).toEqual([
      { id: "s1", label: "Compute 17% of 2,340", agent: "execute", dependsOn: [], args: { expression: { value: "17% of 2,340" } }, reads: [], writes: [], tool: "calculator" },
      { id: "s2", label: "Save it to result.txt", agent: "execute", dependsOn: ["s1"], args: { path: { value: "result.txt" }, content: { ref: "s1", path: "$" } }, reads: [], writes: ["result.txt"], tool: "file_write" },
    ]);
    expect(validatePlan(plan.subtasks, { agents: BUILTIN_AGENTS })).toEqual([]);
    // Literal text is written directly too; a value that is not a number the plan computed is a worker's to write.
    expect(planTask("write 'hello' to note.txt").subtasks).toMatchObject([{ tool: "file_write", args: { path: { value: "note.txt" }, content: { value: "hello" } } }]);
    const copy = planTask("read notes.txt and save it to copy.txt").subtasks.at(-1);
    expect(copy).toMatchObject({ tools: ["file_write"], args: { content: { ref: "s1", path: "$" } } });
    expect(copy).not.toHaveProperty("tool");
  });

  it("plans worker steps for the tools its prompt does not list", () => {
    const plan = planTask("compute 17% of 2,340 and save it to result.txt", { tools: ["file_read"] });
    expect(plan.subtasks.map(({ tool, tools }) => ({ tool, tools }))).toEqual([
      { tool: undefined, tools: ["calculator"] },
      { tool: undefined, tools: ["file_write"] },
    ]);
  });

  it("keeps independent clauses independent, so they run in parallel", () => {
    const plan = planTask("compute 2+2, compute 3*3 and list the files");
    expect(plan.subtasks.map((subtask) => subtask.dependsOn)).toEqual([[], [], []]);
  });

  it("gives an open-ended task a sensible plan of its own words, not a canned one", () => {
    const first = planTask("Compare the economies of Norway and Chile");
    const second = planTask("Summarise the history of the printing press");
    expect(first.subtasks.map((subtask) => subtask.agent)).toEqual(["research", "research"]);
    expect(first.subtasks[1]?.dependsOn).toEqual(["s1"]);
    expect(first.subtasks[0]?.label).toContain("Norway and Chile");
    expect(second.subtasks[0]?.label).toContain("printing press");
  });
});

describe("offline worker", () => {
  it("calls the tools a clause needs, one at a time, and answers from their results", () => {
    const tools = ["file_read", "json"];
    const first = workerStep("Validate the JSON in config.json", {}, [], tools);
    expect(first).toEqual({ toolCall: { name: "file_read", args: { path: "config.json" } } });
    // The file's text itself goes to the json tool, not the read tool's whole reply.
    const read = { tool: "file_read", ok: true as const, value: { path: "config.json", content: '{"a":', encoding: "utf8", bytes: 5, truncated: false }, handle: "results.1" };
    const second = workerStep("Validate the JSON in config.json", {}, [read], tools);
    expect(second).toEqual({ toolCall: { name: "json", args: { operation: "validate", text: '{"a":' } } });
    const done = workerStep(
      "Validate the JSON in config.json",
      {},
      [read, { tool: "json", ok: true, value: { valid: false }, summary: "invalid JSON (line 1, column 6): Unexpected end of JSON input" }],
      tools,
    );
    expect(done).toEqual({ submit: { status: "done", result: "invalid JSON (line 1, column 6): Unexpected end of JSON input" } });
    // A file too large to be shown whole is not guessed at.
    const cut = { ...read, value: { ...read.value, truncated: true } };
    expect(workerStep("Validate the JSON in config.json", {}, [cut], tools)).toEqual({ submit: { status: "failed", reason: expect.stringContaining("too large to check here") } });
  });

  it("validates text handed to it by reference through its handle, exactly", () => {
    expect(workerStep("Validate the JSON in config.json", { text: '{"a": 1}' }, [], ["json"])).toEqual({
      toolCall: { name: "json", args: { operation: "validate", text: { $stash: "args.text" } } },
    });
  });

  it("uses resolved arguments over the words of the label, and fails honestly", () => {
    expect(workerStep("Save it to result.txt", { path: "result.txt", content: 276 }, [], ["file_write"])).toEqual({
      toolCall: { name: "file_write", args: { path: "result.txt", content: { $stash: "args.content" } } },
    });
    expect(workerStep("Read notes.txt", {}, [{ tool: "file_read", ok: false, error: { code: "not_found", message: "missing" } }], ["file_read"])).toEqual({
      submit: { status: "failed", reason: "file_read failed (not_found): missing" },
    });
    expect(workerStep("Compute 2+2", {}, [], ["file_read"])).toEqual({ submit: { status: "failed", reason: "this worker has no calculator tool" } });
    expect(workerStep("Write a sonnet about the sea", {}, [], ["file_write"])).toEqual({ submit: { status: "unable", reason: expect.stringContaining("needs a language model") } });
  });
});

describe("OfflineChatModel", () => {
  it("is a real LangChain chat model: structured output through bindTools, in the plan's JSON wire shape", async () => {
    const model = new OfflineChatModel({});
    const schema = planWireSchema({ agents: BUILTIN_AGENTS, tools: ["calculator", "file_write"], maxSubtasks: 50 });
    const planner = model.withStructuredOutput(schema, { name: STRUCTURED_OUTPUT.plan });
    const wire = await planner.invoke([new SystemMessage(roleLine("planner")), new HumanMessage(section(SECTIONS.task, "compute 23% of 1,200 and save it to share.txt"))]);
    expect((wire.steps[1] as { args?: unknown } | undefined)?.args).toEqual([
      { name: "path", value: "share.txt" },
      { name: "content", ref: "s1", path: "$" },
    ]);
    expect(wire.answer).toContain("Compute 23% of 1,200: 23% of 1,200 = {s1}");
    expect(fromPlanWire(wire as PlanWire, { agentFor: () => "" }).subtasks.map((subtask) => subtask.args)).toEqual([
      { expression: { value: "23% of 1,200" } },
      { path: { value: "share.txt" }, content: { ref: "s1", path: "$" } },
    ]);
  });

  it("writes its plan on the compact wire when no plan function is bound, in the task's words", async () => {
    const reply = (await new OfflineChatModel({}).invoke([new SystemMessage(roleLine("planner")), new HumanMessage(section(SECTIONS.task, "compute 23% of 1,200 and save it to share.txt"))])) as AIMessage;
    const read = readCompactPlan(String(reply.content), planReadContext([], ["calculator", "file_write"]));
    expect(read.success && read.data.subtasks.map(({ id, tool, label, agent }) => ({ id, tool, label, agent }))).toEqual([
      { id: "s1", tool: "calculator", label: "Compute 23% of 1,200", agent: "execute" },
      { id: "s2", tool: "file_write", label: "Save it to share.txt", agent: "execute" },
    ]);
    expect(read.success && read.data.answer).toBe("Answered offline by troupe's rule-based model (no language model was used).\n\n- Compute 23% of 1,200: 23% of 1,200 = {s1}\n- Save it to share.txt: wrote share.txt ({s2.bytes} bytes)");
  });

  it("drives a tool loop: a tool call, then an answer from the tool's result", async () => {
    const model = new OfflineChatModel({}).bindTools([
      { type: "function", function: { name: "calculator", description: "math", parameters: { type: "object", properties: { expression: { type: "string" } } } } },
    ]);
    const system = new SystemMessage(roleLine("execute worker"));
    const human = new HumanMessage([section(SECTIONS.subtask, "s1 (execute): Compute 23% of 1,200"), section(SECTIONS.arguments, "{}")].join("\n\n"));
    const call = (await model.invoke([system, human])) as AIMessage;
    expect(call.tool_calls).toEqual([{ id: expect.any(String), name: "calculator", args: { expression: "23% of 1,200" }, type: "tool_call" }]);
    const result = new ToolMessage({ tool_call_id: call.tool_calls?.[0]?.id ?? "", name: "calculator", content: JSON.stringify({ ok: true, value: 276, summary: "23% of 1,200 = 276", $stash: "results.1" }) });
    // Without the outcome tool bound, the outcome is said in words: the value its handle names.
    const answer = await model.invoke([system, human, call, result]);
    expect(answer.content).toBe("276");
    const withOutcome = new OfflineChatModel({}).bindTools([
      { type: "function", function: { name: "calculator", description: "math", parameters: { type: "object", properties: { expression: { type: "string" } } } } },
      { type: "function", function: { name: STRUCTURED_OUTPUT.result, description: "outcome", parameters: { type: "object", properties: {} } } },
    ]);
    const submitted = (await withOutcome.invoke([system, human, call, result])) as AIMessage;
    expect(submitted.tool_calls).toEqual([{ id: expect.any(String), name: STRUCTURED_OUTPUT.result, args: { status: "done", from: "results.1", path: "$" }, type: "tool_call" }]);
  });
});

describe("offline reading of code tasks", () => {
  it("treats a script to write as code work, not as a file write with nothing to write", () => {
    const intents = parseTask("Write a Python script hn_titles.py that fetches the Hacker News front page and saves each story's title and link as JSON to hn_top.json.");
    expect(intents).toEqual([expect.objectContaining({ kind: "open", agent: "code" })]);
    expect(parseTask("Write a Python script and save it to tool.py")).toEqual([
      expect.objectContaining({ kind: "open", agent: "code" }),
      expect.objectContaining({ kind: "write", path: "tool.py", usesPrevious: true }),
    ]);
    expect(parseTask("compute 2+2 and write it to four.txt")[1]).toMatchObject({ kind: "write", usesPrevious: true });
  });
});

describe("offline critic", () => {
  it("sends back failures a retry could change, and only names those it could not", async () => {
    const { reviewOutcomes } = await import("./review-rules.js");
    const verdict = reviewOutcomes([
      { id: "s1", label: "Divide", agent: "execute", status: "failed", error: "calculator failed (invalid_expression): division by zero" },
      { id: "s2", label: "Fetch", agent: "research", status: "failed", error: "model call failed: timeout" },
      { id: "s3", label: "Add", agent: "execute", status: "done", summary: "4" },
    ]);
    expect(verdict.redo).toEqual(["s2"]);
    expect(verdict.issues).toEqual(["s1 failed: calculator failed (invalid_expression): division by zero", "s2 failed: model call failed: timeout"]);
    expect(verdict.scores.accuracy).toBe(0.33);
    // A direct step's failure leads with the tool's code: not sent back either.
    const direct = reviewOutcomes([
      { id: "s1", label: "Compute 10 / 0", agent: "execute", status: "failed", error: "invalid_expression: division by zero" },
      { id: "s2", label: "Add them", agent: "execute", status: "failed", error: "unknown_variable: unknown variable \"xc\" at position 10 (the variables: xa, xb)" },
    ]);
    expect(direct.redo).toEqual([]);
    expect(direct.issues).toEqual(["s1 failed: invalid_expression: division by zero", 's2 failed: unknown_variable: unknown variable "xc" at position 10 (the variables: xa, xb)']);
  });
});

describe("offline maps over a folder's files", () => {
  it("plans a direct listing, then the work once per file, and hands the successful outputs on", () => {
    const plan = planTask("for each of the files in data/, count the lines, then save them to counts.txt");
    expect(plan.subtasks).toEqual([
      { id: "s1", label: "List the files in data", agent: "research", tool: "file_list", dependsOn: [], args: { path: { value: "data" }, recursive: { value: false } }, reads: ["data"], writes: [] },
      {
        id: "s2",
        label: "Count the lines of each file in data",
        agent: "research",
        dependsOn: ["s1"],
        args: { path: { ref: "s1", path: "$.entries[?(@.type=='file')].path" } },
        mapOver: "path",
        reads: ["data"],
        writes: [],
        tools: ["text_stats"],
      },
      {
        id: "s3",
        label: "Save them to counts.txt",
        agent: "execute",
        dependsOn: ["s2"],
        args: { path: { value: "counts.txt" }, content: { ref: "s2", path: "$.results[?(@.status=='success')].output" } },
        reads: [],
        writes: ["counts.txt"],
        tools: ["file_write"],
      },
    ]);
    expect(validatePlan(plan.subtasks, { agents: BUILTIN_AGENTS, tools: ["file_list", "file_write", "text_stats"] })).toEqual([]);
    expect(planTask("count the words in every file in notes").subtasks.map((subtask) => [subtask.label, subtask.mapOver])).toEqual([
      ["List the files in notes", undefined],
      ["Count the words of each file in notes", "path"],
    ]);
  });

  it("counts a file given as the item argument, through text_stats", () => {
    expect(workerStep("Count the lines of each file in data", { path: "data/a.txt" }, [], ["text_stats"])).toEqual({ toolCall: { name: "text_stats", args: { path: "data/a.txt" } } });
    const stats = { tool: "text_stats", ok: true as const, value: { path: "data/a.txt", bytes: 6, lines: 1, words: 2, characters: 6 } };
    expect(workerStep("Count the lines of each file in data", { path: "data/a.txt" }, [stats], ["text_stats"])).toEqual({ submit: { status: "done", from: "results.1", path: "$.lines" } });
    expect(workerStep("Count the words in notes.txt", {}, [{ ...stats, value: { ...stats.value, path: "notes.txt" } }], ["text_stats"])).toEqual({ submit: { status: "done", from: "results.1", path: "$.words" } });
  });

  it("passes a value too large for the prompt on as its handle", () => {
    const handle = { $stash: "args.content", bytes: 10_000_000, shape: "string" };
    expect(workerStep("Save it to big.txt", { path: "big.txt", content: handle }, [], ["file_write"])).toEqual({ toolCall: { name: "file_write", args: { path: "big.txt", content: handle } } });
  });

  it("sends a partly failed map back once for its failed items, then reports the gaps without retrying again", () => {
    const map = (attempts: number) => ({
      id: "s2",
      label: "Fetch",
      agent: "research",
      status: "done",
      attempts,
      items: { total: 3, succeeded: 2, failed: 1, listed: [{ index: 1, status: "error", input: "u2", error: "timeout" }], notListed: 2 },
    });
    const first = reviewOutcomes([{ id: "s1", label: "List", agent: "research", status: "done", attempts: 1 }, map(1)]);
    expect(first.redo).toEqual(["s2"]);
    expect(first.issues).toEqual(["s2: 1 of 3 items failed: u2 (timeout)"]);
    expect(toVerdict(first, 1).passed).toBe(false);
    const second = reviewOutcomes([{ id: "s1", label: "List", agent: "research", status: "done", attempts: 1 }, map(2)]);
    expect(second.redo).toEqual([]);
    expect(toVerdict(second, 2).passed).toBe(true);
    const answer = synthesize("fetch", [{ ...map(2), items: { ...map(2).items, listed: [{ index: 0, status: "success", input: "u1", output: "3 items" }, ...map(2).items.listed] } }], []);
    expect(answer).toContain("- Fetch: 2 of 3 items succeeded, 1 failed\n    - u1: 3 items\n    - u2: failed — timeout\n    - … 2 more not shown");
  });
});

describe("offline code runs and searches", () => {
  it("plans a sandboxed run for code in backticks or a script, after the clause that writes the script", () => {
    expect(planTask("run `[1, 2, 3].map((n) => n * 2)` and save it to doubled.txt").subtasks).toMatchObject([
      { id: "s1", agent: "execute", args: { language: { value: "javascript" }, code: { value: "[1, 2, 3].map((n) => n * 2)" } } },
      { id: "s2", agent: "execute", dependsOn: ["s1"] },
    ]);
    expect(planTask('write "print(6 * 7)" to answer.py, then run python answer.py').subtasks).toMatchObject([
      { id: "s1", agent: "execute", args: { path: { value: "answer.py" } } },
      { id: "s2", agent: "execute", dependsOn: ["s1"], args: { language: { value: "python" }, path: { value: "answer.py" } } },
    ]);
  });

  it("plans a search of the knowledge folder with the query alone", () => {
    expect(planTask("search the knowledge folder for write-ahead logging").subtasks).toMatchObject([{ agent: "research", args: { query: { value: "write-ahead logging" } } }]);
    expect(planTask("look up LangGraph interrupts").subtasks).toMatchObject([{ agent: "research", args: { query: { value: "LangGraph interrupts" } } }]);
    expect(planTask("find notes about SQLite").subtasks).toMatchObject([{ agent: "research", args: { query: { value: "SQLite" } } }]);
  });
});

describe("offline compositions: arithmetic on earlier results", () => {
  const valid = (task: string) => validatePlan(planTask(task).subtasks, { agents: BUILTIN_AGENTS, tools: ["calculator", "file_read", "file_write", "file_append", "json", "text_stats"] });

  it("binds a continuation to the previous result by reference, as a variable of a direct calculation", () => {
    const plan = planTask("sqrt(144)+3 cubed, then ×2");
    expect(plan.subtasks.map(({ id, label, dependsOn, args, tool }) => ({ id, label, dependsOn, args, tool }))).toEqual([
      { id: "s1", label: "Sqrt(144)+3 cubed", dependsOn: [], args: { expression: { value: "sqrt(144)+3 ^3" } }, tool: "calculator" },
      { id: "s2", label: "×2", dependsOn: ["s1"], args: { expression: { value: "xa ×2" }, xa: { ref: "s1", path: "$" } }, tool: "calculator" },
    ]);
    // Without a direct calculator, the continuation is a template its worker fills.
    expect(planTask("sqrt(144)+3 cubed, then ×2", { tools: ["file_read"] }).subtasks.at(-1)).toMatchObject({ tools: ["calculator"], args: { expression: { value: "{a} ×2" }, a: { ref: "s1", path: "$" } } });
    expect(valid("sqrt(144)+3 cubed, then ×2")).toEqual([]);
    expect(workerStep("×2", { expression: "{a} ×2", a: 39 }, [], ["calculator"])).toEqual({ toolCall: { name: "calculator", args: { expression: "39 ×2" } } });
    expect(workerStep("Square it", { expression: "{a} ^ 2", a: -3 }, [], ["calculator"])).toEqual({ toolCall: { name: "calculator", args: { expression: "(-3) ^ 2" } } });
  });

  it("combines the numbers since the last combination, and computes a total before saving it", () => {
    expect(planTask("compute 15% of 80 and 25% of 40, then add them").subtasks.at(-1)).toMatchObject({
      label: "Add them",
      dependsOn: ["s1", "s2"],
      args: { expression: { value: "xa + xb" }, xa: { ref: "s1", path: "$" }, xb: { ref: "s2", path: "$" } },
      tool: "calculator",
    });
    const total = planTask("compute 15% of 80 and 25% of 40 and save the total to total.txt");
    expect(total.subtasks.map(({ id, dependsOn, args, tool }) => ({ id, dependsOn, args, tool }))).toEqual([
      { id: "s1", dependsOn: [], args: { expression: { value: "15% of 80" } }, tool: "calculator" },
      { id: "s2", dependsOn: [], args: { expression: { value: "25% of 40" } }, tool: "calculator" },
      { id: "s3", dependsOn: ["s1", "s2"], args: { expression: { value: "xa + xb" }, xa: { ref: "s1", path: "$" }, xb: { ref: "s2", path: "$" } }, tool: "calculator" },
      { id: "s4", dependsOn: ["s3"], args: { path: { value: "total.txt" }, content: { ref: "s3", path: "$" } }, tool: "file_write" },
    ]);
    expect(planTask("compute 2^10 and 2^3, then divide the first by the second, then double it").subtasks.slice(2).map((subtask) => subtask.args)).toEqual([
      { expression: { value: "xa / xb" }, xa: { ref: "s1", path: "$" }, xb: { ref: "s2", path: "$" } },
      { expression: { value: "xa * 2" }, xa: { ref: "s3", path: "$" } },
    ]);
    expect(valid("compute 15% of 80 and 25% of 40 and save the total to total.txt")).toEqual([]);
  });

  it("leaves a clause that refers to results the task never produced to a language model", () => {
    const plan = planTask("×2");
    expect(plan.subtasks).toMatchObject([{ label: "×2", args: {} }]);
    expect(workerStep("×2", {}, [], ["calculator"])).toEqual({ submit: { status: "unable", reason: expect.stringContaining("needs a language model") } });
    expect(workerStep("Add them", {}, [], ["calculator"])).toEqual({ submit: { status: "unable", reason: expect.stringContaining("needs a language model") } });
  });
});

describe("offline compositions: saving several results", () => {
  it("plans one write whose template takes every value since the last combination", () => {
    expect(planTask("compute 2^10 and 3^5, then save both to both.txt").subtasks.at(-1)).toEqual({
      id: "s3",
      label: "Save both to both.txt",
      agent: "execute",
      dependsOn: ["s1", "s2"],
      args: { path: { value: "both.txt" }, template: { value: "{a}\n{b}" }, a: { ref: "s1", path: "$" }, b: { ref: "s2", path: "$" } },
      reads: [],
      writes: ["both.txt"],
      tools: ["file_write", "file_append"],
    });
  });

  it("writes numbers as text in one call, and text by handle, one piece after another", () => {
    expect(workerStep("Save both to both.txt", { path: "both.txt", template: "{a}\n{b}", a: 1024, b: 243 }, [], ["file_write", "file_append"])).toEqual({
      toolCall: { name: "file_write", args: { path: "both.txt", content: "1024\n243" } },
    });
    const args = { path: "c.txt", template: "{a}\n{b}", a: "alpha\n", b: "gamma" };
    const wrote = { tool: "file_write", ok: true as const, value: { path: "c.txt", bytes: 6 }, handle: "results.1" };
    expect(workerStep("Save both to c.txt", args, [], ["file_write", "file_append"])).toEqual({ toolCall: { name: "file_write", args: { path: "c.txt", content: { $stash: "args.a" } } } });
    // The first value ends its line: no empty line between them.
    expect(workerStep("Save both to c.txt", args, [wrote], ["file_write", "file_append"])).toEqual({ toolCall: { name: "file_append", args: { path: "c.txt", content: { $stash: "args.b" } } } });
    const appended = { tool: "file_append", ok: true as const, value: { path: "c.txt", bytes: 11 }, handle: "results.2" };
    expect(workerStep("Save both to c.txt", args, [wrote, appended], ["file_write", "file_append"])).toEqual({ submit: { status: "done", result: "wrote c.txt (11 bytes)" } });
  });
});

describe("offline compositions: questions about a JSON file", () => {
  it("reads the file by a direct step and hands its content to the question by reference", () => {
    const plan = planTask("how many users in users.json have an age over 30, then list the emails in users.json");
    expect(plan.subtasks.map(({ id, tool, dependsOn, args }) => ({ id, tool, dependsOn, args }))).toEqual([
      { id: "s1", tool: "file_read", dependsOn: [], args: { path: { value: "users.json" } } },
      { id: "s2", tool: undefined, dependsOn: ["s1"], args: { text: { ref: "s1", path: "$.content" } } },
      { id: "s3", tool: undefined, dependsOn: ["s1"], args: { text: { ref: "s1", path: "$.content" } } },
    ]);
    expect(planTask("the average age of the users in users.json").subtasks.at(-1)).toMatchObject({ dependsOn: ["s2"], tool: "calculator", args: { expression: { value: "avg(xa)" }, xa: { ref: "s2", path: "$" } } });
  });

  it("builds the query from the words and the data's shape, and passes the answer on by handle", () => {
    const text = JSON.stringify({ users: [{ name: "Ann", age: 31 }, { name: "Bob", age: 25 }] });
    const label = "How many users in users.json have an age over 30";
    expect(workerStep(label, { text }, [], ["json"])).toEqual({ toolCall: { name: "json", args: { operation: "query", path: "$.users[?(@.age > 30)]", text: { $stash: "args.text" } } } });
    const matched = { tool: "json", ok: true as const, value: { valid: true, type: "object", matches: [{ name: "Ann", age: 31 }] }, handle: "results.1" };
    expect(workerStep(label, { text }, [matched], ["json"])).toEqual({ submit: { status: "done", from: "results.1", path: "$.matches.length" } });
    const email = "What is the name of the user whose age is 25 in users.json";
    expect(workerStep(email, { text }, [{ ...matched, value: { valid: true, type: "object", matches: ["Bob"] } }], ["json"])).toEqual({ submit: { status: "done", from: "results.1", path: "$.matches[0]" } });
    expect(workerStep("The phones of the users in users.json", { text }, [], ["json"])).toEqual({ submit: { status: "failed", reason: expect.stringContaining("no list of records has phone") } });
    expect(workerStep(label, { text: "{oops" }, [{ ...matched, value: { valid: false, error: "Unexpected token" } }], ["json"])).toEqual({ submit: { status: "failed", reason: "users.json is not valid JSON: Unexpected token" } });
  });
});

describe("offline compositions: every script of a folder", () => {
  it("runs each file on the code agent, by a map over a direct listing", () => {
    for (const task of ["for each file in scripts/, run it", "run every script in scripts/"]) {
      expect(planTask(task).subtasks.map(({ label, agent, tool, mapOver }) => ({ label, agent, tool, mapOver }))).toEqual([
        { label: "List the files in scripts", agent: "research", tool: "file_list", mapOver: undefined },
        { label: "Run each file in scripts", agent: "code", tool: undefined, mapOver: "path" },
      ]);
    }
    expect(workerStep("Run each file in scripts", { path: "scripts/a.py" }, [], ["code_run"])).toEqual({ toolCall: { name: "code_run", args: { language: "python", path: "scripts/a.py" } } });
  });

  it("combines the figures of a map's items as one list", () => {
    expect(planTask("count the lines of each file in data, then add them").subtasks.at(-1)).toMatchObject({
      dependsOn: ["s2"],
      tool: "calculator",
      args: { expression: { value: "sum(xa)" }, xa: { ref: "s2", path: "$.results[?(@.status=='success')].output" } },
    });
    expect(workerStep("Add them", { expression: "sum({a})", a: [3, 1] }, [], ["calculator"])).toEqual({ toolCall: { name: "calculator", args: { expression: "sum(3, 1)" } } });
    // Outputs that are not figures are not added up.
    expect(planTask("for each file in scripts/, run it, then add them").subtasks.at(-1)).toMatchObject({ label: "Add them", args: {} });
  });
});
