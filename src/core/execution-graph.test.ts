import { describe, expect, it } from "vitest";
import { executionGraphMermaid, renderExecutionGraph } from "./execution-graph.js";
import type { PlannedSubtask, SubtaskResult } from "./plan.js";

const plan: PlannedSubtask[] = [
  { id: "A", label: "List the users I follow", agent: "research", tool: "list_users", dependsOn: [], args: {} },
  {
    id: "B",
    label: "Fetch each user's latest items",
    agent: "research",
    tool: "fetch_items",
    dependsOn: ["A"],
    args: { user: { ref: "A", path: "$.users[*].id" }, limit: { value: 3 } },
    mapOver: "user",
  },
  {
    id: "C",
    label: "Summarise the items",
    agent: "execute",
    dependsOn: ["A", "B"],
    args: { items: { ref: "B", path: "$.results[?(@.status=='success')].output" }, names: { ref: "A", path: "$.users[*].name" } },
  },
  { id: "D", label: "Publish the summary", agent: "execute", dependsOn: ["C"], args: {} },
];

const finished: Record<string, SubtaskResult> = {
  A: { status: "done", attempts: 1, summary: "3 users", ref: "stash:r/A", bytes: 120, startedAt: 1_000, endedAt: 1_040 },
  B: {
    status: "done",
    attempts: 2,
    summary: "2/3 items succeeded",
    ref: "stash:r/B",
    bytes: 900,
    startedAt: 1_050,
    endedAt: 1_250,
    map: { overallStatus: "PARTIAL_SUCCESS", total: 3, succeeded: 2, failed: 1, failures: [{ index: 1, input: "u2", error: "tool_failed: upstream timeout" }] },
  },
  C: { status: "failed", attempts: 1, error: "model call failed: overloaded", startedAt: 1_300, endedAt: 1_310 },
  D: { status: "skipped", attempts: 0, error: "not run: C failed" },
};

describe("the execution graph renderer", () => {
  it("draws a finished run with a partial failure: statuses, summaries, durations and labelled edges", () => {
    const graph = renderExecutionGraph(plan, finished);
    expect(graph.nodes).toEqual([
      { id: "A", label: "List the users I follow", agent: "research", tool: "list_users", status: "SUCCESS", summary: "3 users", durationMs: 40, startedAt: 1_000, endedAt: 1_040, items: null },
      {
        id: "B",
        label: "Fetch each user's latest items",
        agent: "research",
        tool: "fetch_items",
        status: "PARTIAL_SUCCESS",
        summary: "2/3 items succeeded; failed: u2 (tool_failed: upstream timeout)",
        durationMs: 200,
        startedAt: 1_050,
        endedAt: 1_250,
        items: { total: 3, succeeded: 2, failed: 1 },
      },
      { id: "C", label: "Summarise the items", agent: "execute", tool: null, status: "FAILED", summary: "model call failed: overloaded", durationMs: 10, startedAt: 1_300, endedAt: 1_310, items: null },
      { id: "D", label: "Publish the summary", agent: "execute", tool: null, status: "SKIPPED", summary: "not run: C failed", durationMs: null, items: null },
    ]);
    expect(graph.edges).toEqual([
      { from: "A", to: "B", label: "user (each)" },
      { from: "A", to: "C", label: "names" },
      { from: "B", to: "C", label: "items" },
      { from: "C", to: "D", label: "" },
    ]);
    // C ended last; of its inputs B ended last, and B's only input is A. Waiting between them is in the makespan, not in the path's work.
    expect(graph.criticalPath).toEqual(["A", "B", "C"]);
    expect(graph.criticalPathMs).toBe(250);
    expect(graph.makespanMs).toBe(310);
  });

  it("writes Mermaid from the same model", () => {
    const mermaid = executionGraphMermaid(renderExecutionGraph(plan, finished));
    expect(mermaid.split("\n").slice(0, 9)).toEqual([
      "flowchart TD",
      '  n_A["A · research · list_users<br/>List the users I follow<br/>SUCCESS · 40 ms<br/>3 users"]:::success',
      '  n_B["B · research · fetch_items<br/>Fetch each user\'s latest items<br/>PARTIAL_SUCCESS · 200 ms<br/>2/3 items succeeded; failed: u2 (tool_failed: upstream timeout)"]:::partial_success',
      '  n_C["C · execute<br/>Summarise the items<br/>FAILED · 10 ms<br/>model call failed: overloaded"]:::failed',
      '  n_D["D · execute<br/>Publish the summary<br/>SKIPPED<br/>not run: C failed"]:::skipped',
      '  n_A -->|"user (each)"| n_B',
      '  n_A -->|"names"| n_C',
      '  n_B -->|"items"| n_C',
      "  n_C --> n_D",
    ]);
    expect(mermaid).toContain("classDef partial_success fill:#ffedd5");
    expect(mermaid.split("\n").at(-1)).toBe("  class n_A,n_B,n_C critical");
  });

  it("shows pending and running subtasks without a duration, a running one with its start", () => {
    const graph = renderExecutionGraph(plan, { A: finished.A as SubtaskResult }, { running: ["B"], runningSince: { B: 1_045 } });
    expect(graph.nodes.map((node) => [node.id, node.status, node.durationMs, node.startedAt, node.endedAt])).toEqual([
      ["A", "SUCCESS", 40, 1_000, 1_040],
      ["B", "RUNNING", null, 1_045, undefined],
      ["C", "PENDING", null, undefined, undefined],
      ["D", "PENDING", null, undefined, undefined],
    ]);
    expect(Object.keys(graph.nodes[2] ?? {})).not.toContain("startedAt");
    // Only what has ended counts: A alone so far.
    expect(graph.criticalPath).toEqual(["A"]);
    expect(graph.makespanMs).toBe(40);
  });

  it("shows a redone subtask's last attempt, and no times for one reset for a redo", () => {
    const redone = renderExecutionGraph(plan, { ...finished, C: { status: "done", attempts: 2, summary: "ok", startedAt: 5_000, endedAt: 5_020 }, D: { status: "pending", attempts: 1 } });
    expect(redone.nodes.map((node) => [node.id, node.startedAt, node.endedAt])).toEqual([
      ["A", 1_000, 1_040],
      ["B", 1_050, 1_250],
      ["C", 5_000, 5_020],
      ["D", undefined, undefined],
    ]);
    expect(redone.criticalPath).toEqual(["A", "B", "C"]);
    expect(redone.makespanMs).toBe(4_020);
  });

  it("has no critical path or makespan before anything ran", () => {
    const graph = renderExecutionGraph(plan, {});
    expect(graph).toMatchObject({ criticalPath: [], criticalPathMs: null, makespanMs: null });
    expect(executionGraphMermaid(graph)).not.toContain("critical");
  });

  it("keeps labels safe for Mermaid and bounded", () => {
    const tricky: PlannedSubtask[] = [{ id: "s-1", label: 'Say "hi" <b>|</b> ' + "x".repeat(500), agent: "execute", dependsOn: [], args: {} }];
    const mermaid = executionGraphMermaid(renderExecutionGraph(tricky, {}));
    const line = mermaid.split("\n")[1] ?? "";
    expect(line.startsWith('  n_s_1["s-1 · execute<br/>Say #quot;hi#quot; #lt;b#gt;#124;#lt;/b#gt; x')).toBe(true);
    expect(line.length).toBeLessThan(200);
  });
});
