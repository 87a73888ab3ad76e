import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { STRUCTURED_OUTPUT } from "../src/core/prompt-protocol.js";
import { finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import type { ScriptStep } from "../src/testing/scripted-chat-model.js";
import { runCli, runScripted, tempDir, writeScript } from "./helpers.js";
import { envelope, makeApp, waitForStatus } from "./server-helpers.js";

/** The synthesizer's typed answer: a call of submit_answer, as structured output makes it. */
function typedAnswer(args: Record<string, unknown>, extra: Partial<ScriptStep> = {}): ScriptStep {
  return { role: "synthesizer", toolCalls: [{ name: STRUCTURED_OUTPUT.answer, args }], ...extra };
}

const WORK: ScriptStep[] = [planStep([subtask("s1", "execute", "Compute 17% of 2,340")]), finalStep("s1", "397.8"), reviewStep(0.9)];

const SCHEMA = {
  type: "object",
  properties: { value: { type: "number" }, unit: { type: "string", enum: ["percent", "absolute"] } },
  required: ["value", "unit"],
  additionalProperties: false,
};

describe("typed answers", () => {
  it("a zod output schema: the answer is JSON valid against it, in `output`", async () => {
    const { result, model } = await runScripted([...WORK, typedAnswer({ value: 397.8, unit: "absolute" })], {
      outputSchema: z.object({ value: z.number(), unit: z.enum(["percent", "absolute"]) }),
    });
    model.assertDone();
    expect(result.status, result.error).toBe("completed");
    expect(result.output).toEqual({ value: 397.8, unit: "absolute" });
    expect(JSON.parse(result.answer ?? "")).toEqual({ value: 397.8, unit: "absolute" });
    // The schema went to the model as the answer's structured-output function.
    const call = model.callsFor("synthesizer")[0];
    expect(call?.tools).toEqual([STRUCTURED_OUTPUT.answer]);
  });

  it("an answer that cannot be made valid: one repair with the validation errors, then a failed run naming them", async () => {
    const { result, model } = await runScripted([...WORK, typedAnswer({ value: "a lot", unit: "absolute" }), typedAnswer({ value: "still a lot", unit: "m" }, { contains: "at /value: must be number" })], {
      outputSchema: SCHEMA,
    });
    model.assertDone();
    expect(result.status).toBe("failed");
    expect(result.output).toBeUndefined();
    expect(result.error).toMatch(/the synthesizer failed: .*submit_answer answer was invalid after one repair: at \/value: must be number/);
  });

  it("refuses a schema that is not one before anything runs", async () => {
    await expect(runScripted([], { outputSchema: { type: "object", properties: { a: { type: "no-such-type" } } } })).rejects.toThrow(/the output schema is not a valid JSON Schema/);
  });

  it("the CLI: --output-schema prints the JSON with --json (exit 0); invalid answers exit 1 with the errors; a bad file exits 2", async () => {
    const directory = tempDir();
    const schema = path.join(directory, "schema.json");
    writeFileSync(schema, JSON.stringify(SCHEMA));
    const env = (steps: ScriptStep[], name: string) => ({ TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, name, steps) });
    const good = await runCli(["run", "compute 17% of 2,340", "--output-schema", schema, "--json"], { cwd: directory, env: env([...WORK, typedAnswer({ value: 397.8, unit: "absolute" })], "good.json") });
    expect(good.code, good.stderr).toBe(0);
    expect(JSON.parse(good.stdout)).toMatchObject({ status: "completed", output: { value: 397.8, unit: "absolute" } });
    const bad = await runCli(["run", "compute 17% of 2,340", "--output-schema", schema], { cwd: directory, env: env([...WORK, typedAnswer({ value: "x", unit: "absolute" }), typedAnswer({ value: "y", unit: "absolute" })], "bad.json") });
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/at \/value: must be number/);
    writeFileSync(path.join(directory, "broken.json"), "{ not json");
    const broken = await runCli(["run", "compute 17% of 2,340", "--output-schema", path.join(directory, "broken.json")], { cwd: directory, env: env(WORK, "unused.json") });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/--output-schema .*broken\.json is not JSON/);
    const missing = await runCli(["run", "compute 17% of 2,340", "--output-schema", "nowhere.json"], { cwd: directory, env: env(WORK, "unused2.json") });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--output-schema nowhere\.json: no such file/);
  });
});

describe("typed answers over HTTP", () => {
  it("output_schema: the finished task's result has the JSON as output; a schema that is not one is a 400", async () => {
    const app = await makeApp({ steps: [...WORK, typedAnswer({ value: 397.8, unit: "absolute" })] });
    const accepted = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 17% of 2,340", output_schema: SCHEMA } }));
    const done = await waitForStatus(app, accepted.data.task_id, ["completed", "failed"]);
    expect(done.status).toBe("completed");
    expect(done.result).toEqual({ answer: JSON.stringify({ value: 397.8, unit: "absolute" }, null, 2), answer_format: "text", output: { value: 397.8, unit: "absolute" } });
    const refused = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "t", output_schema: { type: "object", properties: { a: { type: 7 } } } } });
    expect(refused.statusCode).toBe(400);
    expect(envelope(refused).message).toMatch(/the output schema is not a valid JSON Schema/);
  });
});
