import { describe, expect, it } from "vitest";
import type { ConversationView } from "../../core/conversation.js";
import { validatePlan } from "../../core/plan.js";
import { parseClause } from "./intents.js";
import { planTask } from "./planner-rules.js";
import { workerStep } from "./worker-rules.js";

type ViewTurn = ConversationView["turns"][number];

function turnOf(turn: number, results: Array<{ subtask: string; label: string; shape?: string; value?: string; wrote?: boolean }>, files: string[] = []): ViewTurn {
  return {
    turn,
    run: `run-${turn}`,
    task: `task ${turn}`,
    status: "completed",
    results: results.map((result) => ({ ...result, handle: `stash:run-${turn}/${result.subtask}`, summary: result.value ?? "", bytes: 1 })),
    files,
  };
}

const history = (...turns: ViewTurn[]): ConversationView => ({ summary: null, turns });
const TOOLS = ["calculator", "file_write", "thread_result", "memory_save", "memory_search", "memory_forget", "text_stats", "file_read"];

describe("the offline planner in a conversation", () => {
  it("takes \"it\" from the latest turn's value, by a thread_result step, and saves it by reference", () => {
    const plan = planTask("save it to mem.txt", { history: history(turnOf(1, [{ subtask: "s1", label: "Compute 2+3", shape: "number", value: "5" }])), tools: TOOLS });
    expect(plan.subtasks).toEqual([
      expect.objectContaining({ id: "s1", tool: "thread_result", args: { handle: { value: "stash:run-1/s1" } }, dependsOn: [] }),
      expect.objectContaining({ id: "s2", agent: "execute", args: { path: { value: "mem.txt" }, content: { ref: "s1", path: "$" } }, dependsOn: ["s1"] }),
    ]);
    expect(validatePlan(plan.subtasks, { agents: ["research", "code", "execute", "memory"], tools: TOOLS })).toEqual([]);
  });

  it("skips results that report a file written, and the turns that produced nothing", () => {
    const conversation = history(
      turnOf(1, [{ subtask: "s1", label: "Compute 6*7", shape: "number", value: "42" }, { subtask: "s2", label: "Save it to a.txt", shape: "object {path, bytes}", wrote: true }], ["a.txt"]),
      turnOf(2, []),
    );
    const plan = planTask("double it", { history: conversation, tools: TOOLS });
    expect(plan.subtasks[0]).toMatchObject({ tool: "thread_result", args: { handle: { value: "stash:run-1/s1" } } });
    expect(plan.subtasks[1]).toMatchObject({ tool: "calculator", args: { xa: { ref: "s1", path: "$" } }, dependsOn: ["s1"] });
  });

  it("adds the numbers of the latest turn, or the last number of each of the two latest turns", () => {
    const within = planTask("add them", { history: history(turnOf(1, [{ subtask: "s1", label: "Compute 2", shape: "number" }, { subtask: "s2", label: "Compute 3", shape: "number" }])), tools: TOOLS });
    expect(within.subtasks.filter((subtask) => subtask.tool === "thread_result").map((subtask) => subtask.args.handle)).toEqual([{ value: "stash:run-1/s1" }, { value: "stash:run-1/s2" }]);
    const across = planTask("save the total to t.txt", {
      history: history(turnOf(1, [{ subtask: "s1", label: "Compute 2+3", shape: "number" }]), turnOf(2, [{ subtask: "s1", label: "Compute 4*5", shape: "number" }])),
      tools: TOOLS,
    });
    expect(across.subtasks.map((subtask) => subtask.tool ?? subtask.agent)).toEqual(["thread_result", "thread_result", "calculator", "file_write"]);
    expect(across.subtasks[2]?.label).toMatch(/total/i);
    expect(across.subtasks[3]?.args.content).toEqual({ ref: "s3", path: "$" });
  });

  it("reads \"that file\" and \"it\" after a file verb as the file the conversation wrote last, unless the task names one first", () => {
    const conversation = history(turnOf(1, [{ subtask: "s1", label: "Save 5 to notes.txt", wrote: true }], ["notes.txt"]));
    expect(planTask("count the words in that file", { history: conversation, tools: TOOLS }).subtasks[0]).toMatchObject({ args: { path: { value: "notes.txt" } } });
    expect(planTask("read it", { history: conversation, tools: TOOLS }).subtasks[0]).toMatchObject({ label: "Read notes.txt", args: { path: { value: "notes.txt" } } });
    expect(planTask("delete the file", { history: conversation, tools: TOOLS }).subtasks[0]).toMatchObject({ args: { path: { value: "notes.txt" } } });
    // The task's own file comes first: "it" is what the task just wrote.
    const own = planTask("write 'hi' to b.txt, then count the words in that file", { history: conversation, tools: TOOLS });
    expect(JSON.stringify(own.subtasks)).not.toContain("notes.txt");
  });

  it("leaves a reference to nothing for a language model: no conversation, no thread_result tool, or nothing that fits", () => {
    for (const context of [{}, { history: history(), tools: TOOLS }, { history: history(turnOf(1, [{ subtask: "s1", label: "Compute 1", shape: "number" }])), tools: TOOLS.filter((tool) => tool !== "thread_result") }]) {
      const plan = planTask("save it to mem.txt", context);
      expect(plan.subtasks.some((subtask) => subtask.tool === "thread_result")).toBe(false);
    }
    // "add them" needs two numbers; one earlier number is not enough.
    const one = planTask("add them", { history: history(turnOf(1, [{ subtask: "s1", label: "Compute 1", shape: "number" }])), tools: TOOLS });
    expect(one.subtasks.some((subtask) => subtask.tool === "thread_result")).toBe(false);
  });

  it("answers \"what was the result?\" with the latest value", () => {
    const plan = planTask("what was the result?", { history: history(turnOf(1, [{ subtask: "s1", label: "Compute 2+3", shape: "number" }])), tools: TOOLS });
    expect(plan.subtasks).toEqual([expect.objectContaining({ tool: "thread_result" })]);
  });
});

describe("the offline model and long-term memory", () => {
  it("reads remember / what is / forget clauses", () => {
    expect(parseClause("remember that the capital of Atlantis is Poseidonia")).toMatchObject({ kind: "remember", fact: "the capital of Atlantis is Poseidonia", subject: "the capital of Atlantis" });
    expect(parseClause("Remember: my train leaves at 9")).toMatchObject({ kind: "remember" });
    expect(parseClause("remember it")).toMatchObject({ kind: "open" });
    expect(parseClause("What is the capital of Atlantis?")).toMatchObject({ kind: "recall", query: "the capital of Atlantis" });
    expect(parseClause("what do you know about Poseidonia")).toMatchObject({ kind: "recall", query: "Poseidonia" });
    // A question about a code is a question, not code to write.
    expect(parseClause("what is the launch code?")).toMatchObject({ kind: "recall", query: "the launch code" });
    expect(parseClause("forget what you know about the launch code")).toMatchObject({ kind: "forget", query: "the launch code" });
    // Arithmetic, files and earlier values keep their own readings.
    expect(parseClause("what is 2+3")).toMatchObject({ kind: "compute" });
    expect(parseClause("what is in notes.txt")).toMatchObject({ kind: "read" });
    expect(parseClause("what is it?")).toMatchObject({ kind: "previous" });
  });

  it("plans memory clauses through the memory tools, and leaves them for a language model without them", () => {
    const plan = planTask("remember that the capital of Atlantis is Poseidonia", { tools: TOOLS });
    expect(plan.subtasks).toEqual([
      expect.objectContaining({ tool: "memory_save", agent: "memory", args: { text: { value: "the capital of Atlantis is Poseidonia" }, subject: { value: "the capital of Atlantis" } } }),
    ]);
    expect(planTask("what is the capital of Atlantis?", { tools: TOOLS }).subtasks).toEqual([expect.objectContaining({ agent: "research", args: { query: { value: "the capital of Atlantis" } } })]);
    const without = planTask("remember that the capital of Atlantis is Poseidonia", { tools: ["calculator"] });
    expect(without.subtasks.every((subtask) => subtask.tool === undefined && subtask.agent === "research")).toBe(true);
  });

  it("answers from a fact only when it holds every word of the question that carries meaning", () => {
    const tools = ["memory_search", "memory_forget"];
    const found = (items: Array<{ id: string; text: string }>) => ({ tool: "memory_search", ok: true as const, value: { query: "q", retrieval: "lexical", items }, handle: "results.1" });
    const atlantis = { id: "m-000000000001", text: "The capital of Atlantis is Poseidonia" };
    expect(workerStep("What is the capital of Atlantis", {}, [], tools)).toEqual({ toolCall: { name: "memory_search", args: { query: "the capital of Atlantis" } } });
    expect(workerStep("What is the capital of Atlantis", {}, [found([atlantis])], tools)).toEqual({ submit: { status: "done", from: "results.1", path: "$.items[0].text" } });
    // A loose match is not an answer: the capital of France is not the capital of Atlantis.
    const france = workerStep("What is the capital of France", {}, [found([atlantis])], tools);
    expect(france).toEqual({ submit: { status: "unable", reason: expect.stringContaining("needs a language model") } });
    // Forgetting takes only a fact plainly about what was named.
    expect(workerStep("Forget what you know about Atlantis", {}, [found([atlantis])], tools)).toEqual({ toolCall: { name: "memory_forget", args: { id: "m-000000000001" } } });
    expect(workerStep("Forget what you know about France", {}, [found([atlantis])], tools)).toEqual({ submit: { status: "failed", reason: expect.stringContaining("nothing was forgotten") } });
  });
});
