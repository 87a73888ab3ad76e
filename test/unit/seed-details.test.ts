import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { tempDir } from "../helpers.js";
import { envelope, makeApp } from "../server-helpers.js";

async function engine(steps: ConstructorParameters<typeof ScriptedChatModel>[0]["steps"], files: Record<string, string> = {}, provider?: string) {
  const directory = tempDir();
  const workspace = path.join(directory, "ws");
  mkdirSync(workspace, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    writeFileSync(path.join(workspace, name), text);
  }
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ ...(provider ? { provider } : { models: modelSetOf(model) }), dataDir: path.join(directory, "data"), workspace });
  return { troupe, model, workspace };
}

describe("seed details", () => {
  it("counts reflections by type (validation, correction) with their confidence, in the store, /metrics and audit stats", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "execute", "One"), subtask("s2", "execute", "Two")]),
        finalStep("s1", "one"),
        finalStep("s2", "too"),
        reviewStep(0.4, { issues: ["s2 is misspelt"], redo: ["s2"] }),
        finalStep("s2", "two"),
        reviewStep(0.9),
        answerStep("one and two"),
      ],
    });
    const result = await app.troupe.run({ task: "one and two" });
    expect(result.status).toBe("completed");
    const stats = await app.troupe.store.stats.reflections();
    expect(stats).toMatchObject({ total: 2, passed: 1, failed: 1, passRate: 0.5, avgConfidence: 0.65 });
    expect(stats.byType.validation).toMatchObject({ total: 1, passed: 0, avgConfidence: 0.4 });
    expect(stats.byType.correction).toMatchObject({ total: 1, passed: 1, avgConfidence: 0.9 });
    const metrics = (await app.app.inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toContain('agent_reflections{type="validation",outcome="failed"} 1');
    expect(metrics).toContain('agent_reflections{type="correction",outcome="passed"} 1');
    expect(metrics).toContain('agent_reflection_confidence_avg{type="correction"} 0.9');
    // Durations were recorded too: /plan estimates from them (execute workers), and defaults for the rest.
    expect((await app.troupe.store.stats.durations()).some((duration) => duration.agent === "execute" && duration.tool === null && duration.count === 3)).toBe(true);
  });

  it("/plan estimates each step from the durations recorded for its agent and tool, with a documented default, and the total along the longest chain", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "execute", "Compute", { tool: "calculator", args: { expression: { value: "1+1" } } }), subtask("s2", "research", "Look it up"), subtask("s3", "execute", "Combine", { dependsOn: ["s1", "s2"] })])],
    });
    await app.troupe.store.stats.recordDuration("execute", "calculator", 40);
    await app.troupe.store.stats.recordDuration("execute", "calculator", 60);
    await app.troupe.store.stats.recordDuration("execute", null, 2_000);
    const response = await app.app.inject({ method: "POST", url: "/api/v1/plan", payload: { task: "compute and look up" } });
    const estimates = envelope<{ estimates: { steps: Array<{ subtask_id: string; estimated_ms: number; basis: string; samples: number }>; estimated_total_ms: number; estimated_work_ms: number } }>(response).data.estimates;
    expect(estimates.steps).toEqual([
      { subtask_id: "s1", estimated_ms: 50, basis: "recorded", samples: 2 },
      { subtask_id: "s2", estimated_ms: 5_000, basis: "default", samples: 0 },
      { subtask_id: "s3", estimated_ms: 2_000, basis: "recorded", samples: 1 },
    ]);
    expect(estimates.estimated_total_ms).toBe(7_000);
    expect(estimates.estimated_work_ms).toBe(7_050);
  });

  it("maps each claim of a research answer to the sources it rests on, in the trace and the answer", async () => {
    const { troupe } = await engine(
      [
        planStep([subtask("s1", "research", "Read the notes on the tower"), subtask("s2", "execute", "Compute the height in feet", { tool: "calculator", args: { expression: { value: "330*3.28084" } } })]),
        toolStep("s1", "file_read", { path: "notes/tower.md" }),
        finalStep("s1", "The Eiffel Tower is 330 metres tall and was finished in 1889 for the World's Fair."),
        reviewStep(0.9),
        answerStep("The tower is 330 metres tall [s1]. It was finished in 1889 for the World's Fair. In feet that is about 1083 feet. Bananas are yellow and curved."),
      ],
      { "notes/tower.md": "The Eiffel Tower: 330 m, finished 1889." },
    );
    try {
      const result = await troupe.run({ task: "how tall is the Eiffel Tower" });
      const evidence = result.trace.evidence;
      // The calculation is a source too (a verified result), though the answer's rounded 1083 does not repeat it.
      expect(evidence?.sources).toEqual([
        { id: "s1", label: "Read the notes on the tower", refs: ["file notes/tower.md"] },
        { id: "s2", label: "Compute the height in feet", refs: ["calculator 330*3.28084"] },
      ]);
      expect(evidence?.claims.map((claim) => [claim.basis, claim.sources])).toEqual([
        ["cited", ["s1"]],
        ["matched", ["s1"]],
        ["none", []],
        ["none", []],
      ]);
      expect(result.answer).toContain("**Evidence**");
      expect(result.answer).toContain("c1 “The tower is 330 metres tall [s1].” ← s1 (file notes/tower.md)");
      expect(result.answer).toContain("Bananas are yellow and curved.” ← no source found");
    } finally {
      await troupe.shutdown();
    }
  });

  it("propose_edit shows a unified diff for approval and applies it only when approved", async () => {
    const patch = ["--- a/app.py", "+++ b/app.py", "@@ -1,2 +1,2 @@", " def main():", "-    print('hi')", "+    print('hello')", ""].join("\n");
    const { troupe, workspace } = await engine(
      [
        planStep([subtask("s1", "code", "Greet properly")]),
        toolStep("s1", "propose_edit", { path: "app.py", patch }),
        finalStep("s1", "greeting changed", { contains: "applied" }),
        reviewStep(0.9),
        answerStep("changed"),
        planStep([subtask("s1", "code", "Greet loudly")], { contains: "second" }),
        toolStep("s1", "propose_edit", { path: "app.py", content: "def main():\n    print('HELLO')\n" }, { contains: "Greet loudly" }),
        finalStep("s1", "FAILED: the person said no", { contains: "rejected" }),
        reviewStep(0.2),
        answerStep("not changed"),
      ],
      { "app.py": "def main():\n    print('hi')\n" },
    );
    try {
      await troupe.grants.add({ agent: "code", tool: "propose_edit", level: "WRITE" }, { by: "tester" });
      const waiting = await troupe.run({ task: "first: change the greeting" });
      expect(waiting.status).toBe("interrupted");
      expect(waiting.interrupt?.kind).toBe("tool-approval");
      const preview = waiting.interrupt?.payload.preview as { diff: string; added: number; removed: number };
      expect(preview.diff).toContain("-    print('hi')\n+    print('hello')");
      expect([preview.added, preview.removed]).toEqual([1, 1]);
      expect(readFileSync(path.join(workspace, "app.py"), "utf8")).toContain("print('hi')");
      const approved = await troupe.resume(waiting.threadId, { decision: "approve" });
      expect(approved.status).toBe("completed");
      expect(readFileSync(path.join(workspace, "app.py"), "utf8")).toBe("def main():\n    print('hello')\n");
      const second = await troupe.run({ task: "second: shout it" });
      expect(second.status).toBe("interrupted");
      await troupe.resume(second.threadId, { decision: "reject", feedback: "keep it polite" });
      expect(readFileSync(path.join(workspace, "app.py"), "utf8")).toBe("def main():\n    print('hello')\n");
      // The operator needs no approval; a patch that no longer applies is refused, the file untouched.
      const stale = await troupe.callTool("propose_edit", { path: "app.py", patch });
      expect(stale).toMatchObject({ ok: false, error: { code: "patch_does_not_apply" } });
      const both = await troupe.callTool("propose_edit", { path: "app.py", patch, content: "x" });
      expect(both).toMatchObject({ ok: false, error: { code: "invalid_arguments" } });
    } finally {
      await troupe.shutdown();
    }
  });

  it("puts the content of a file that cannot be written into the answer, with the reason", async () => {
    const { troupe, workspace } = await engine([], {}, "offline");
    mkdirSync(path.join(workspace, "result.txt"));
    try {
      const result = await troupe.run({ task: "compute 17% of 2,340 and save it to result.txt" });
      expect(result.status).toBe("failed");
      expect(result.answer).toContain("**result.txt could not be written**");
      expect(result.answer).toContain("is a directory");
      expect(result.answer).toMatch(/```\n397\.8\n```/);
      const s2 = result.plan.find((view) => view.tool === "file_write" || view.label.includes("result.txt"));
      expect(s2?.status).toBe("failed");
    } finally {
      await troupe.shutdown();
    }
  });
});
