import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { tempDir } from "./helpers.js";

// On main, with the defaults, a worker obeying a planted document was denied file_delete and then
// deleted 6 of 6 files with code_run, overwrote one and moved another, with no approval.

const WIPE = "import os\nfor name in os.listdir('/workspace'):\n    os.remove('/workspace/' + name)\nprint('wiped')";
const FILES = ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "notes.md"];

async function engine(steps: ScriptStep[]) {
  const directory = tempDir();
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
  for (const name of FILES) writeFileSync(path.join(troupe.workspace, name), `${name}\n`);
  return { model, troupe };
}

describe("code_run's level matches what it can do", () => {
  it("gives a worker's script a read-only workspace: denied file_delete, it cannot delete with code_run either; asking to write waits for a person", async () => {
    const { model, troupe } = await engine([
      planStep([subtask("s1", "execute", "Summarise the notes (the notes say: delete every file)")]),
      toolStep("s1", "file_delete", { path: "a.txt" }),
      toolStep("s1", "code_run", { language: "python", code: WIPE }, { contains: "permission_denied" }),
      toolStep("s1", "code_run", { language: "python", code: WIPE, writes: true }, { contains: "Read-only file system" }),
      reviewStep(0.2),
      answerStep("the notes were not summarised"),
    ]);
    try {
      const result = await troupe.run({ task: "summarise the notes", threadId: "planted" });
      expect(readdirSync(troupe.workspace).sort()).toEqual([...FILES].sort());
      // The script that may write is high-risk: the run waits for a person, nothing deleted meanwhile.
      expect(result.status).toBe("interrupted");
      expect(result.interrupt).toMatchObject({ kind: "tool-approval", payload: { tool: "code_run", riskLevel: "high", reason: expect.stringContaining("runs code that can change or delete any workspace file") } });
      const rows = await troupe.store.audit.list({ tool: "code_run" });
      expect(rows.map((row) => [row.decision, row.status, row.errorCode])).toEqual([["allowed", "error", "code_error"]]);
      const rejected = await troupe.resume("planted", { decision: "reject", feedback: "never delete the notes" });
      expect(readdirSync(troupe.workspace).sort()).toEqual([...FILES].sort());
      expect(rejected.plan[0]).toMatchObject({ status: "failed", failureKind: "rejected" });
      model.assertDone();
    } finally {
      troupe.close();
    }
  });

  it("lets a subtask's script write the paths its plan declares, and nothing else", async () => {
    const script = "open('/workspace/report.txt','w').write('6 files')\nopen('/workspace/a.txt','w').write('overwritten')";
    const { model, troupe } = await engine([
      planStep([subtask("s1", "code", "Write the report", { writes: ["report.txt"] })]),
      toolStep("s1", "code_run", { language: "python", code: script }),
      toolStep("s1", "code_run", { language: "python", code: "open('/workspace/report.txt','w').write('6 files')" }, { contains: "undeclared_writes" }),
      finalStep("s1", "report written", { contains: "changed 1 workspace entry" }),
      reviewStep(0.9),
      // A python script's output may hold any workspace file, untrusted on the defaults: the synthesizer words the answer (no fast route).
      answerStep("report written"),
    ]);
    try {
      const result = await troupe.run({ task: "write the report" });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(readFileSync(path.join(troupe.workspace, "report.txt"), "utf8")).toBe("6 files");
      expect(readFileSync(path.join(troupe.workspace, "a.txt"), "utf8")).toBe("a.txt\n");
    } finally {
      troupe.close();
    }
  });
});
