import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { RunResult } from "../src/core/run.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, outcomeStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { createBuiltinRegistry } from "../src/tools/builtin/index.js";
import { defineTool } from "../src/tools/define-tool.js";
import { eventsOf, runCli, runScripted, tempDir, writeScript } from "./helpers.js";

/** An engine on a scripted model, in temporary folders, with extra tools and config. */
async function engine(steps: ScriptStep[], options: { toolsConfig?: unknown; extraTools?: Parameters<typeof defineTool>[0][] } = {}) {
  const directory = tempDir();
  const model = new ScriptedChatModel({ steps });
  const tools = createBuiltinRegistry();
  for (const tool of options.extraTools ?? []) tools.register(defineTool(tool));
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    tools,
    toolsConfig: options.toolsConfig ?? {},
  });
  return { model, troupe, workspace: troupe.workspace };
}

const byId = (result: RunResult) => Object.fromEntries(result.plan.map((view) => [view.id, view]));

describe("a worker's outcome is explicit", () => {
  it("a worker that says it cannot do the work fails its subtask, and what takes its result is skipped, never fed its text", async () => {
    const { model, result } = await runScripted([
      planStep([
        subtask("s1", "research", "Find the figure"),
        subtask("s2", "execute", "Save the figure", { dependsOn: ["s1"], args: { content: { ref: "s1", path: "$" }, path: { value: "figure.txt" } } }),
      ]),
      outcomeStep("s1", { status: "unable", reason: "the figure is behind a login this worker cannot pass" }),
      reviewStep(0.9, {}, { contains: "behind a login" }),
      answerStep("no figure"),
    ]);
    model.assertDone();
    const views = byId(result);
    expect(views.s1).toMatchObject({ status: "failed", failureKind: "unable", error: "the figure is behind a login this worker cannot pass" });
    expect(views.s2).toMatchObject({ status: "skipped", error: "not run: s1 failed" });
    // Never called: the dependent's worker has no step in the script, and an unexpected call would fail assertDone.
    expect(model.callsFor("execute")).toHaveLength(0);
    // The critic scored 0.9, but a review cannot pass while work is not done.
    expect(result.trace.reviews[0]).toMatchObject({ confidence: 0.9, passed: false });
    expect(result.status).toBe("failed");
    expect(result.trace.unfinished.map((entry) => [entry.id, entry.status, entry.failureKind])).toEqual([
      ["s1", "failed", "unable"],
      ["s2", "skipped", undefined],
    ]);
  });

  it("a plain-text answer is not taken as done: the worker is asked how the subtask ended, through structured output", async () => {
    const { model, result } = await runScripted([
      planStep([subtask("s1", "research", "Read the report")]),
      { role: "research", subtask: "s1", content: "I'm sorry, I could not open the report: access was denied." },
      outcomeStep("s1", { status: "failed", reason: "access to the report was denied" }, { contains: "Report how the subtask ended" }),
      reviewStep(0.2, { issues: ["s1 failed"] }),
      answerStep("no report"),
    ]);
    model.assertDone();
    expect(byId(result).s1).toMatchObject({ status: "failed", failureKind: "error", error: "access to the report was denied" });
    expect(result.status).toBe("failed");
    // The follow-up is a forced call of submit_result.
    expect(model.calls[2]?.tools).toEqual(["submit_result"]);
  });

  it("a result that is empty where a dependent needs a value fails the subtask (empty), and the dependent is skipped", async () => {
    const { model, result } = await runScripted([
      planStep([
        subtask("s1", "research", "Produce a value"),
        subtask("s2", "execute", "Use the value", { dependsOn: ["s1"], args: { value: { ref: "s1", path: "$" } } }),
      ]),
      { role: "research", subtask: "s1", content: "   " },
      // An empty answer is asked for once more; a second one is a plain answer like any other.
      { role: "research", subtask: "s1", content: "   ", contains: "Your answer was empty" },
      outcomeStep("s1", { status: "done" }, { contains: "Report how the subtask ended" }),
      reviewStep(0.9),
      answerStep("nothing"),
    ]);
    model.assertDone();
    expect(byId(result).s1).toMatchObject({ status: "failed", failureKind: "empty", error: "finished without a result, and s2 takes arguments from it" });
    expect(byId(result).s2?.status).toBe("skipped");
    expect(result.status).toBe("failed");
  });

  it("a handle that does not resolve is told to the worker, which can correct it; the value flows on exactly", async () => {
    const text = "line one  \r\nline two\t\n\n";
    const { model, troupe, workspace } = await engine([
      planStep([subtask("s1", "research", "Read the notes", { args: { path: { value: "notes.txt" } } })]),
      toolStep("s1", "file_read", { path: "notes.txt" }),
      outcomeStep("s1", { status: "done", from: "results.9", path: "$.content" }, { contains: '"$stash":"results.1"' }),
      outcomeStep("s1", { status: "done", from: "results.1", path: "$.content" }, { contains: "is not a handle of this subtask" }),
      // A worker decided s1, so the critic reviews; it read a workspace file, untrusted on the defaults, so the synthesizer words the answer.
      reviewStep(0.9),
      answerStep("the notes, as they are"),
    ]);
    writeFileSync(path.join(workspace, "notes.txt"), text);
    try {
      const result = await troupe.run({ task: "read the notes" });
      model.assertDone();
      expect(result.status).toBe("completed");
      const view = byId(result).s1;
      expect(view?.status).toBe("done");
      expect(await troupe.store.stash.get(view?.ref as string)).toBe(text);
    } finally {
      troupe.close();
    }
  });
});

describe("files a subtask writes are checked", () => {
  it("a file written empty while its source had content fails the subtask (artifact), whatever the model says", async () => {
    const { model, result } = await runScripted(
      [
        planStep([
          subtask("s1", "research", "Read the source", { tool: "file_read", args: { path: { value: "source.txt" } } }),
          subtask("s2", "execute", "Save it to copy.txt", { dependsOn: ["s1"], args: { content: { ref: "s1", path: "$.content" } } }),
        ]),
        // The model retypes the content, and gets it wrong: nothing at all.
        toolStep("s2", "file_write", { path: "copy.txt", content: "" }),
        finalStep("s2", "saved", { contains: "wrote copy.txt (0 bytes" }),
        reviewStep(1, {}, { contains: '"identical":false' }),
        answerStep("copied"),
      ],
      { task: "copy the source" },
      { workspaceFiles: { "source.txt": "x".repeat(8_900) } },
    );
    model.assertDone();
    const s2 = byId(result).s2;
    expect(s2).toMatchObject({ status: "failed", failureKind: "artifact", error: "copy.txt is empty, but its source s1 $.content has 8900 bytes" });
    expect(s2?.artifacts).toEqual([
      { path: "copy.txt", tool: "file_write", action: "written", bytes: 0, sha256: expect.any(String), source: { from: "s1 $.content", bytes: 8900, identical: false, byReference: false } },
    ]);
    expect(result.status).toBe("failed");
  });

  it("the critic sees each file's size and whether it matches its source, and a file changed since", async () => {
    const { model, result } = await runScripted(
      [
        planStep([
          subtask("s1", "research", "Read the source", { tool: "file_read", args: { path: { value: "source.txt" } } }),
          subtask("s2", "execute", "Save it to copy.txt", { dependsOn: ["s1"], args: { content: { ref: "s1", path: "$.content" } } }),
        ]),
        toolStep("s2", "file_write", { path: "copy.txt", content: { $stash: "args.content" } }),
        finalStep("s2", "saved"),
        reviewStep(1, {}, { contains: '"identical":true' }),
        answerStep("copied"),
      ],
      { task: "copy the source" },
      { workspaceFiles: { "source.txt": "abc\r\n" } },
    );
    model.assertDone();
    expect(result.status).toBe("completed");
    expect(byId(result).s2?.artifacts?.[0]).toMatchObject({ path: "copy.txt", bytes: 5, source: { from: "s1 $.content", bytes: 5, identical: true, byReference: true } });
  });
});

describe("a person's rejection is final for the plan", () => {
  it("is not asked again when the critic names the rejected subtask to redo; the run stops as rejected", async () => {
    const { model, troupe, workspace } = await engine(
      [
        planStep([subtask("s1", "execute", "Remove old.txt")]),
        toolStep("s1", "file_delete", { path: "old.txt" }),
        // The critic asks for the rejected subtask again: code does not send it back.
        reviewStep(0.2, { issues: ["s1 was rejected"], redo: ["s1"] }),
        answerStep("old.txt kept"),
      ],
      { toolsConfig: { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } } },
    );
    writeFileSync(path.join(workspace, "old.txt"), "old");
    try {
      expect((await troupe.run({ task: "remove old.txt", threadId: "no-again" })).interrupt?.kind).toBe("tool-approval");
      const done = await troupe.resume("no-again", { decision: "reject", feedback: "keep it" });
      model.assertDone();
      expect(done.status).toBe("failed");
      expect(done.stopReason).toBe("rejected");
      expect(done.plan[0]).toMatchObject({ status: "failed", failureKind: "rejected", attempts: 1 });
      expect(existsSync(path.join(workspace, "old.txt"))).toBe(true);
      expect((await troupe.store.audit.list()).map((row) => row.decision)).toEqual(["rejected"]);
    } finally {
      troupe.close();
    }
  });

  it("goes to the planner with the person's feedback when the critic asks for a new plan", async () => {
    const { model, troupe, workspace } = await engine(
      [
        planStep([subtask("s1", "execute", "Remove old.txt")]),
        toolStep("s1", "file_delete", { path: "old.txt" }),
        reviewStep(0.2, { issues: ["the deletion was refused"], replan: true }),
        planStep([subtask("s1", "execute", "Move old.txt into archive/")], { contains: "a person rejected a tool call of s1 (Remove old.txt): a person rejected this call to file_delete: archive it instead" }),
        toolStep("s1", "file_move", { from: "old.txt", to: "archive/old.txt" }, { contains: "Move old.txt" }),
        finalStep("s1", "archived", { contains: "moved old.txt" }),
        // A worker decided s1, so the critic reviews; its one subtask's result is the answer (no synthesizer).
        reviewStep(0.9),
      ],
      { toolsConfig: { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } } },
    );
    writeFileSync(path.join(workspace, "old.txt"), "old");
    try {
      await troupe.run({ task: "get rid of old.txt", threadId: "replan" });
      const done = await troupe.resume("replan", { decision: "reject", feedback: "archive it instead" });
      model.assertDone();
      expect(done.status).toBe("completed");
      expect(readFileSync(path.join(workspace, "archive", "old.txt"), "utf8")).toBe("old");
    } finally {
      troupe.close();
    }
  });
});

describe("plans are ordered by the workspace paths their subtasks use", () => {
  it("adds a missing read-after-write dependency and says so in the trace", async () => {
    const { model, result, events } = await runScripted(
      [
        planStep([
          subtask("s1", "execute", "Write the words", { tool: "file_write", args: { path: { value: "words.txt" }, content: { value: "alpha beta gamma" } } }),
          subtask("s2", "research", "Count the words", { tool: "text_stats", args: { path: { value: "words.txt" } } }),
        ]),
        // Two verified direct tool results: no critic; the synthesizer words them.
        answerStep("3 words"),
      ],
      { task: "write then count" },
    );
    model.assertDone();
    expect(result.status).toBe("completed");
    expect(byId(result).s2?.dependsOn).toEqual(["s1"]);
    expect(result.trace.planNotes).toEqual(["s2 now runs after s1: it reads what the other writes, words.txt"]);
    expect(eventsOf(events, "plan-ready")[0]?.notes).toEqual(result.trace.planNotes);
    expect(byId(result).s2?.summary).toBe("words.txt: 1 lines, 3 words, 16 characters");
  });

  it("sends a plan whose reader comes before an unordered writer back to the planner with the conflict", async () => {
    const { model, result, events } = await runScripted(
      [
        planStep([
          subtask("s1", "research", "Count the words", { tool: "text_stats", args: { path: { value: "words.txt" } } }),
          subtask("s2", "execute", "Write the words", { tool: "file_write", args: { path: { value: "words.txt" }, content: { value: "alpha beta" } } }),
        ]),
        planStep(
          [
            subtask("s1", "execute", "Write the words", { tool: "file_write", args: { path: { value: "words.txt" }, content: { value: "alpha beta" } } }),
            subtask("s2", "research", "Count the words", { tool: "text_stats", args: { path: { value: "words.txt" } }, dependsOn: ["s1"] }),
          ],
          { contains: "subtask s1 reads words.txt and subtask s2 writes it" },
        ),
        // Two verified direct tool results: no critic; the synthesizer words them.
        answerStep("2 words"),
      ],
      { task: "count after writing" },
    );
    model.assertDone();
    expect(eventsOf(events, "plan-invalid")[0]?.errors).toEqual([
      'subtask s1 reads words.txt and subtask s2 writes it, and neither depends on the other: add "s2" to s1.dependsOn if s1 needs what s2 writes, or "s1" to s2.dependsOn if s1 must read it first',
    ]);
    expect(result.status).toBe("completed");
  });
});

describe("bad input ends in a clear failed outcome", () => {
  it("a file that vanished between read and write fails the step that needed it, naming it", async () => {
    const { model, result } = await runScripted(
      [
        planStep([
          subtask("s1", "research", "Check the source", { tool: "file_read", args: { path: { value: "source.txt" } } }),
          subtask("s2", "execute", "Remove the source (elsewhere)", { tool: "vanish", dependsOn: ["s1"], args: { path: { value: "source.txt" } } }),
          subtask("s3", "execute", "Copy the source", { tool: "file_copy", dependsOn: ["s2"], args: { from: { value: "source.txt" }, to: { value: "copy.txt" } } }),
        ]),
        reviewStep(0.9),
        answerStep("not copied"),
      ],
      { task: "copy a file that goes away" },
      {
        workspaceFiles: { "source.txt": "data" },
        extraTools: [
          defineTool({
            name: "vanish",
            description: "Removes a file behind troupe's back (as another program would)",
            schema: z.object({ path: z.string() }),
            permission: "READ",
            riskLevel: "low",
            idempotent: true,
            timeoutMs: 1_000,
            execute: async ({ path: file }, context) => {
              rmSync(path.join(context.workspace, file));
              return "gone";
            },
          }),
        ],
      },
    );
    model.assertDone();
    expect(byId(result).s3).toMatchObject({ status: "failed", failureKind: "error", error: 'not_found: "source.txt" does not exist in the workspace' });
    expect(result.status).toBe("failed");
  });
});

describe("status and exit codes", () => {
  it("a budget that runs out after the work is done and reviewed still completes (exit 0); the answer is written by code", async () => {
    const { result } = await runScripted(
      [planStep([subtask("s1", "research", "Look")]), finalStep("s1", "found"), reviewStep(0.9)],
      // The subject is the synthesizer left without budget after the review: the whole pipeline (no fast route).
      { task: "look", budget: { maxModelCalls: 3 }, review: "always" },
    );
    expect(result.stopReason).toBe("budget_exhausted");
    expect(result.status).toBe("completed");
    expect(result.answer).toMatch(/budget ran out/);
  });

  it("max_iterations with the only subtask failed exits 1 and names it; completed exits 0", async () => {
    const directory = tempDir();
    const failing = await runCli(["run", "try twice", "--json", "--max-iterations", "2"], {
      cwd: directory,
      env: {
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "fail.json", [
          planStep([subtask("s1", "research", "Flaky lookup")]),
          { role: "research", subtask: "s1", error: "provider exploded", times: 2 },
          reviewStep(0.3, { issues: ["s1 failed"], redo: ["s1"] }, { times: 2 }),
          answerStep("no luck"),
        ]),
      },
    });
    expect(failing.code).toBe(1);
    const output = JSON.parse(failing.stdout) as RunResult;
    expect([output.status, output.stopReason]).toEqual(["failed", "max_iterations"]);
    expect(output.trace.unfinished).toEqual([{ id: "s1", label: "Flaky lookup", status: "failed", failureKind: "error", error: expect.stringMatching(/^model call failed: .*provider exploded$/) }]);
    const human = await runCli(["runs", "show", output.runId], { cwd: directory });
    expect(human.stdout).toMatch(/not done: s1 failed/);

    const passing = await runCli(["run", "once", "--json"], {
      cwd: directory,
      env: { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, "pass.json", [planStep([subtask("s1", "research", "Lookup")]), finalStep("s1", "ok"), reviewStep(0.9), answerStep("ok")]) },
    });
    expect(passing.code).toBe(0);
  });
});
