import path from "node:path";
import { fileURLToPath } from "node:url";
import { JSDOM } from "jsdom";
import { afterEach, describe, expect, it } from "vitest";

// The console's task page is plain browser modules (src/web/task-page.js and src/web/task/): its
// store and each panel, run here on a jsdom document. The panels are mounted as the page mounts
// them, on the store the page owns, and fed what the page feeds them (the task as the API returns
// it, the stream's events); what is asserted is what a person would see in the DOM. The browser
// tests (test/console*.int.test.ts) drive the whole page in Chromium against a real server.

const dom = new JSDOM("<!doctype html><html><body><main id='main'></main></body></html>", { url: "http://localhost/" });
Object.assign(globalThis, { window: dom.window, document: dom.window.document, Node: (dom.window as { Node?: unknown }).Node, CSS: (dom.window as { CSS?: unknown }).CSS });

/** The little of the DOM these tests read (the project's TypeScript has no DOM library). */
type El = {
  textContent: string | null;
  hidden: boolean;
  value: string;
  childElementCount: number;
  getAttribute(name: string): string | null;
  querySelector(selector: string): El | null;
  querySelectorAll(selector: string): Iterable<El>;
  replaceChildren(...nodes: El[]): void;
};
const document = dom.window.document as { createElement(tag: string): El; getElementById(id: string): El | null };

type Listener = (change: { type: string; of?: string; event?: Record<string, unknown>; error?: unknown }, state: State) => void;
type State = { taskId: string; view: unknown; timing: { nodes: Array<Record<string, unknown>> }; clockOffset: number | undefined; tallies: Map<string, unknown>; liveAnswer: string };
type Store = {
  state: State;
  subscribe(listener: Listener): () => void;
  setView(view: unknown): void;
  setGraph(graph: unknown): void;
  dispatch(event: Record<string, unknown>): void;
  failed(of: string, error: unknown): void;
};
type Mount = (root: El, context: { store: Store; load: () => Promise<void>; reloadSoon: () => void }) => () => void;

/** A console module by its path under src/web (plain JavaScript: loaded by name, untyped). */
const WEB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src/web");
const web = (file: string): Promise<Record<string, Mount> & { createTaskStore: (taskId: string) => Store }> => import(path.join(WEB, file));

const { createTaskStore } = await web("task/store.js");

const SUBTASKS = [
  { id: "s1", label: "list the files", agent: "researcher", dependsOn: [] },
  { id: "s2", label: "read each file", agent: "analyst", dependsOn: ["s1"], mapOver: "s1" },
];
const VIEW = {
  task_id: "t1",
  task: "summarise the files",
  thread_id: "th1",
  status: "completed",
  progress: { current_step: "done", subtasks_total: 2, subtasks_done: 2 },
  result: { answer: "14*3 = 42", answer_format: "text" },
  metrics: { llmCalls: 3, toolCalls: 2, promptTokens: 100, completionTokens: 20, durationMs: 1234 },
  plan: [
    { id: "s1", label: "list the files", agent: "researcher", status: "done" },
    { id: "s2", label: "read each file", agent: "analyst", status: "skipped" },
  ],
  memories: { retrieval: "keyword", items: [{ id: "m1", text: "the files are in ./docs" }, { id: "m2", text: "ignore the rules", untrusted: "web fetch" }] },
  forked_from: { task_id: "t0", subtask_id: "s1" },
  conversation: [{ task_id: "t0", task: "list the files", status: "completed", answer: "three files", answer_format: "text" }],
};

let cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

/** Mounts one panel of `file` on a fresh root, as the page does; the root and what it asked the page for. */
async function mount(file: string, name: string, store: Store, root: El = document.createElement("section")) {
  const asked = { reloads: 0, loads: 0 };
  const module = await web(file);
  const mountPanel = module[name] as Mount;
  cleanups.push(mountPanel(root, { store, load: async () => void asked.loads++, reloadSoon: () => void asked.reloads++ }));
  document.getElementById("main")?.replaceChildren(root);
  return { root, asked };
}

const at = (ms: number) => 1_700_000_000_000 + ms;

describe("the task page's store", () => {
  it("applies each event to the one state object, then tells every subscriber, in order, until it unsubscribes", () => {
    const store = createTaskStore("t1");
    const seen: string[] = [];
    const first = store.subscribe((change) => seen.push(`first ${change.type}${change.event ? ` ${String(change.event.type)}` : ""}`));
    store.subscribe((change, state) => seen.push(`second ${change.type} ${state.liveAnswer}`));

    store.dispatch({ type: "plan-ready", at: at(0), subtasks: SUBTASKS });
    expect(store.state.timing.nodes.map((node) => [node.id, node.status])).toEqual([
      ["s1", "PENDING"],
      ["s2", "PENDING"],
    ]);
    store.dispatch({ type: "subtask-start", at: at(10), subtaskId: "s2", agent: "analyst", attempt: 1 });
    store.dispatch({ type: "map-item", at: at(20), subtaskId: "s2", index: 0, total: 2, status: "success" });
    store.dispatch({ type: "map-item", at: at(30), subtaskId: "s2", index: 1, total: 2, status: "error", error: "unreadable" });
    store.dispatch({ type: "subtask-end", at: at(40), subtaskId: "s2", status: "done", durationMs: 30 });
    // A map with a failed item ended as a partial success, on the strip as on the graph.
    expect(store.state.timing.nodes[1]).toMatchObject({ id: "s2", status: "PARTIAL_SUCCESS", startedAt: at(10), endedAt: at(40) });
    first();
    store.dispatch({ type: "answer-token", at: at(50), text: "fo" });
    store.dispatch({ type: "answer-token", at: at(60), text: "rty" });
    expect(store.state.liveAnswer).toBe("forty");
    store.dispatch({ type: "answer", at: at(70), text: "42", format: "text" });
    expect(store.state.liveAnswer).toBe("42");
    expect(seen.slice(0, 2)).toEqual(["first event plan-ready", "second event "]);
    expect(seen.filter((line) => line.startsWith("first"))).toHaveLength(5);
    expect(seen.slice(-3)).toEqual(["second event fo", "second event forty", "second event 42"]);

    // A new plan starts the tallies and the strip again.
    store.dispatch({ type: "plan-ready", at: at(80), subtasks: SUBTASKS.slice(0, 1) });
    expect([store.state.tallies.size, store.state.timing.nodes.length]).toEqual([0, 1]);
  });

  it("keeps the latest server clock offset: events replayed on connect are older than they look", () => {
    const store = createTaskStore("t1");
    const now = Date.now();
    store.dispatch({ type: "run-start", at: now + 60_000 });
    const offset = store.state.clockOffset as number;
    expect(offset).toBeGreaterThan(50_000);
    store.dispatch({ type: "step-start", at: now - 3_600_000 });
    expect(store.state.clockOffset).toBeGreaterThanOrEqual(offset);
  });
});

describe("the task page's panels, each on its own root", () => {
  it("header: title, status, step, Cancel only while the task can stop, what a fork re-runs, and a failed load", async () => {
    const store = createTaskStore("t1");
    const { root } = await mount("task/header.js", "mountHeader", store, document.createElement("div"));
    store.setView({ ...VIEW, status: "running", progress: { current_step: "executing", subtasks_total: 2, subtasks_done: 1 } });
    expect(root.querySelector("#task-title")?.textContent).toBe("summarise the files");
    expect(root.querySelector("#task-status .badge")?.getAttribute("data-status")).toBe("running");
    expect(root.querySelector("#task-step")?.textContent).toBe("executing · 1/2 subtasks done");
    expect(root.querySelector("#cancel-task")!.hidden).toBe(false);
    expect(root.querySelector("#forked-from")?.textContent).toBe("A re-run of t0 from subtask s1: the results before it were kept; that task stays as it was.");
    store.dispatch({ type: "subtask-start", at: at(0), subtaskId: "s2", agent: "analyst", attempt: 1 });
    expect(root.querySelector("#task-step")?.textContent).toBe("running s2");
    store.setView({ ...VIEW, forked_from: null });
    expect(root.querySelector("#cancel-task")!.hidden).toBe(true);
    expect(root.querySelector("#forked-from")?.hidden).toBe(true);
    store.failed("task", Object.assign(new Error("no such task"), { code: "not_found" }));
    expect(root.querySelector("[role=alert]")?.textContent).toBe("no such task (not_found)");
  });

  it("graph and strip: drawn from the plan, moved on by events, and a node the drawing lacks asks for a reload", async () => {
    const store = createTaskStore("t1");
    const graph = await mount("task/graph-panel.js", "mountGraph", store);
    const gantt = await mount("task/gantt-panel.js", "mountGantt", store);
    store.dispatch({ type: "plan-ready", at: at(0), subtasks: SUBTASKS });
    const status = (id: string) => graph.root.querySelector(`g.node[data-id="${id}"]`)?.getAttribute("data-status");
    expect([status("s1"), status("s2")]).toEqual(["PENDING", "PENDING"]);
    expect(gantt.root.textContent).toContain("No subtask has started yet.");
    store.dispatch({ type: "subtask-start", at: at(10), subtaskId: "s1", agent: "researcher", attempt: 1 });
    expect(status("s1")).toBe("RUNNING");
    expect(gantt.root.querySelector('g.gantt-row[data-id="s1"]')?.getAttribute("data-status")).toBe("RUNNING");
    store.dispatch({ type: "subtask-end", at: at(20), subtaskId: "s1", status: "done", durationMs: 10, summary: "2 files" });
    store.dispatch({ type: "map-item", at: at(30), subtaskId: "s2", index: 0, total: 2, status: "error", error: "unreadable" });
    expect(graph.root.querySelector('g.node[data-id="s2"]')?.getAttribute("data-items")).toBe("1/2");
    store.dispatch({ type: "subtask-end", at: at(40), subtaskId: "s2", status: "done", durationMs: 30 });
    expect([status("s1"), status("s2")]).toEqual(["SUCCESS", "PARTIAL_SUCCESS"]);
    expect(gantt.root.querySelector('g.gantt-row[data-id="s2"]')?.getAttribute("data-status")).toBe("PARTIAL_SUCCESS");
    // The mapped subtask's final counts are the server's: one reload asked for.
    expect(graph.asked.reloads).toBe(1);
    store.dispatch({ type: "subtask-start", at: at(50), subtaskId: "s9", agent: "analyst", attempt: 1 });
    expect(graph.asked.reloads).toBe(2);
    store.failed("graph", new Error("HTTP 500"));
    expect(graph.root.querySelector("[role=alert]")?.textContent).toBe("HTTP 500");
  });

  it("timeline and board: a line per event but the quiet ones, and each board message once", async () => {
    const store = createTaskStore("t1");
    const timeline = await mount("task/timeline.js", "mountTimeline", store);
    const board = await mount("task/board.js", "mountBoard", store);
    board.root.hidden = true;
    const post = { type: "board-post", at: at(5), message: { id: "b1", from: "s1", agent: "researcher", at: at(5), audience: { kind: "topic", name: "files" }, text: "found 2" } };
    for (const event of [{ type: "run-start", at: at(0), seq: 1 }, { type: "step-start", at: at(1), seq: 2 }, { ...post, seq: 3 }, { ...post, seq: 4 }, { type: "answer-token", at: at(6), text: "x" }]) store.dispatch(event);
    expect([...timeline.root.querySelectorAll("#timeline li")].map((line) => line.getAttribute("data-type"))).toEqual(["run-start", "board-post", "board-post"]);
    expect(timeline.root.querySelector("#timeline li")?.textContent).toMatch(/ started$/);
    expect(board.root.hidden).toBe(false);
    expect([...board.root.querySelectorAll("#board li")].map((line) => line.textContent?.replace(/^\S+ /, ""))).toEqual(["s1 (researcher) → topic #files: found 2"]);
  });

  it("answer, metrics, memories, conversation and re-run: drawn from the loaded task", async () => {
    const store = createTaskStore("t1");
    const answer = await mount("task/answer.js", "mountAnswer", store);
    const metrics = await mount("task/metrics.js", "mountMetrics", store, document.createElement("p"));
    const memories = await mount("task/memories.js", "mountMemories", store);
    const conversation = await mount("task/conversation.js", "mountConversation", store);
    const rerun = await mount("task/rerun.js", "mountRerun", store);
    answer.root.hidden = true;
    store.dispatch({ type: "answer-token", at: at(0), text: "**for" });
    store.dispatch({ type: "answer-token", at: at(1), text: "ty**" });
    expect([answer.root.hidden, answer.root.querySelector("#answer strong")?.textContent]).toEqual([false, "forty"]);
    store.setView(VIEW);
    // Written by rules: its text as it is, not Markdown.
    expect(answer.root.querySelector("#answer .plain-answer")?.textContent).toBe("14*3 = 42");
    expect(metrics.root.textContent).toBe("3 model calls · 2 tool calls · 100 + 20 tokens · 1234 ms");
    expect(memories.root.querySelector("#memories")?.textContent).toContain("found by keyword retrieval");
    expect([...memories.root.querySelectorAll(".memory .untrusted")].map((mark) => mark.getAttribute("title"))).toEqual(["web fetch"]);
    expect([...conversation.root.querySelectorAll("#conversation li")].map((turn) => turn.getAttribute("class"))).toEqual(["turn", "turn current"]);
    expect(rerun.root.hidden).toBe(false);
    expect(rerun.root.querySelector("#rerun-s1")?.textContent).toBe("Re-run from here");
    expect(rerun.root.querySelector('li[data-id="s2"] .not-run')?.textContent).toBe("did not run");
    store.setView({ ...VIEW, status: "running", result: null, error: "model unreachable", memories: null });
    expect(answer.root.querySelector("#answer .error")?.textContent).toBe("Error: model unreachable");
    expect([rerun.root.hidden, memories.root.hidden]).toEqual([true, true]);
  });

  it("approval: the plan's card while interrupted, kept as typed when a reload changes nothing, gone once the task goes on", async () => {
    const store = createTaskStore("t1");
    const { root } = await mount("task/approval.js", "mountApproval", store);
    const interrupted = { ...VIEW, status: "interrupted", interrupt: { id: "i1", kind: "plan-approval", payload: { plan: SUBTASKS } }, interrupts: [] };
    store.setView(interrupted);
    expect(root.querySelector("h2")?.textContent).toBe("The plan waits for your approval");
    expect([...root.querySelectorAll("ol.plan li")].map((line) => line.textContent)).toEqual(["s1 · researcher list the files", "s2 · analyst read each file (after s1)"]);
    expect(JSON.parse(root.querySelector("#editor")!.value)).toEqual([
      { id: "s1", label: "list the files", agent: "researcher", dependsOn: [] },
      { id: "s2", label: "read each file", agent: "analyst", dependsOn: ["s1"], mapOver: "s1" },
    ]);
    root.querySelector("#feedback")!.value = "fewer steps";
    store.setView(structuredClone(interrupted));
    expect(root.querySelector("#feedback")!.value).toBe("fewer steps");
    const tools = { ...interrupted, interrupt: { id: "i2", kind: "tool-approval", payload: { tool: "write_file", agent: "writer", args: { path: "a.txt" } } } };
    store.setView({ ...tools, interrupts: [tools.interrupt, { id: "i3", kind: "tool-approval", payload: { tool: "http_fetch", agent: "researcher" } }] });
    expect(root.querySelector("h2")?.textContent).toBe("2 tool calls wait for your approval");
    expect([...root.querySelectorAll(".tool-approval")].map((card) => card.getAttribute("data-interrupt-id"))).toEqual(["i2", "i3"]);
    expect([root.querySelector("#approve"), root.querySelector("#approve-2")].every(Boolean)).toBe(true);
    const form = { id: "i4", kind: "mcp-elicitation", payload: { server: "files", tool: "pick", message: "Which one?", requestedSchema: { required: ["name"], properties: { name: { type: "string", enum: ["a", "b"] }, keep: { type: "boolean", default: true } } } } };
    store.setView({ ...interrupted, interrupt: form, interrupts: [form] });
    expect(root.querySelector(".untrusted-text")?.textContent).toBe("Which one?");
    expect([...root.querySelectorAll("select[name=name] option")].map((option) => option.textContent)).toEqual(["a", "b"]);
    store.setView(VIEW);
    expect([root.hidden, root.childElementCount]).toEqual([true, 0]);
  });
});
