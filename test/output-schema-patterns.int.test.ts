import { writeFileSync } from "node:fs";
import path from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { STRUCTURED_OUTPUT } from "../src/core/prompt-protocol.js";
import { finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import type { ScriptStep } from "../src/testing/scripted-chat-model.js";
import { runCli, tempDir, writeScript } from "./helpers.js";
import { listen, mcpClient, structured } from "./protocol-helpers.js";
import { envelope, makeApp, type TestApp, waitForStatus } from "./server-helpers.js";

// An output schema's patterns (pattern, patternProperties, propertyNames) and formats are programs
// a caller supplies. Every path — the CLI's --output-schema, REST's and MCP's output_schema — checks
// them the same way and runs them in linear time (RE2; format "url" by the URL parser). On main MCP
// refused ^(a+)+$ that the CLI took, ran the answer's patterns on V8 behind safe-regex2 (which
// passes ^(a|a)*$), and a "url" format took cubic time everywhere.

const KEYS = { apiKeys: "alice:key-alice-123,mallory:key-mallory-666" };
const ALICE = { authorization: "Bearer key-alice-123" };
const MALLORY = { authorization: "Bearer key-mallory-666" };

const WORK: ScriptStep[] = [planStep([subtask("s1", "execute", "Compute 17% of 2,340")]), finalStep("s1", "397.8"), reviewStep(0.9)];
const typed = (args: Record<string, unknown>): ScriptStep => ({ role: "synthesizer", toolCalls: [{ name: STRUCTURED_OUTPUT.answer, args }] });
const schemaWith = (pattern: string) => ({ type: "object", properties: { value: { type: "string", pattern } }, required: ["value"] });

/** 29 a's and a b: ^(a|a)*$ backtracks 2^29 times on V8 before it fails. */
const EXPONENTIAL = `${"a".repeat(29)}b`;

/** Runs `work` while another key's /api/v1/health is polled; the polls answered meanwhile. */
async function healthWhile<T>(app: TestApp, work: () => Promise<T>): Promise<{ value: T; polls: number }> {
  let done = false;
  let polls = 0;
  const poller = (async () => {
    while (!done) {
      const response = await app.app.inject({ method: "GET", url: "/api/v1/health", headers: ALICE });
      expect(response.statusCode).toBe(200);
      if (!done) polls += 1;
      await nextTurn();
    }
  })();
  try {
    return { value: await work(), polls };
  } finally {
    done = true;
    await poller;
  }
}

function cliEnv(directory: string, name: string, steps: ScriptStep[]) {
  return { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, name, steps) };
}

describe("one check of an output schema's patterns on every path", () => {
  const refused: Array<[string, Record<string, unknown>]> = [
    ["a lookahead pattern", schemaWith("^(?=a)a+$")],
    ["a backreference", schemaWith("(a)\\1")],
    ["a lookbehind in patternProperties", { type: "object", patternProperties: { "(?<=x)y": { type: "string" } } }],
    ["a lookahead in propertyNames", { type: "object", propertyNames: { pattern: "^(?!secret)" } }],
  ];

  it("refuses the same patterns with the same error on the CLI, over REST and over MCP; accepts ^(a+)+$ on all three", async () => {
    const directory = tempDir();
    const app = await makeApp({ config: KEYS, steps: [...WORK, typed({ value: "aaa" }), ...WORK, typed({ value: "aaa" }), ...WORK, typed({ value: "aaa" })] });
    const client = await mcpClient(await listen(app), { key: "key-mallory-666" });
    for (const [what, schema] of refused) {
      const file = path.join(directory, "schema.json");
      writeFileSync(file, JSON.stringify(schema));
      const cli = await runCli(["run", "compute 17% of 2,340", "--output-schema", file], { cwd: directory, env: cliEnv(directory, "unused.json", WORK) });
      expect([what, cli.code]).toEqual([what, 2]);
      const cliMessage = /troupe: (the output schema.*)/.exec(cli.stderr)?.[1]?.trim();
      expect(cliMessage, cli.stderr).toMatch(/^the output schema is not a valid JSON Schema: the pattern ".*" cannot be used: .*(lookahead and lookbehind|backreferences) cannot run in linear time/);

      const rest = await app.app.inject({ method: "POST", url: "/api/v1/execute", headers: MALLORY, payload: { task: "compute 17% of 2,340", output_schema: schema } });
      expect([what, rest.statusCode, envelope(rest).code]).toEqual([what, 400, "invalid_output_schema"]);
      expect(envelope(rest).message).toBe(cliMessage);

      const mcp = await client.callTool({ name: "run_task", arguments: { task: "compute 17% of 2,340", output_schema: schema } });
      expect(mcp.isError).toBe(true);
      expect((mcp.content as Array<{ text: string }>)[0]?.text).toBe(`invalid_output_schema: ${cliMessage}`);
    }
    expect(await app.troupe.store.runs.count({})).toBe(0);

    // ^(a+)+$ is linear on RE2: taken on every path (MCP refused it on main).
    const star = schemaWith("^(a+)+$");
    const file = path.join(directory, "star.json");
    writeFileSync(file, JSON.stringify(star));
    const cli = await runCli(["run", "compute 17% of 2,340", "--output-schema", file, "--json"], { cwd: directory, env: cliEnv(directory, "star-script.json", [...WORK, typed({ value: "aaa" })]) });
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ status: "completed", output: { value: "aaa" } });
    const rest = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", headers: MALLORY, payload: { task: "compute 17% of 2,340", output_schema: star } })).data;
    expect((await waitForStatus(app, rest.task_id, ["completed", "failed"], MALLORY)).status).toBe("completed");
    const mcp = structured<{ status: string; structured_answer: unknown }>(await client.callTool({ name: "run_task", arguments: { task: "compute 17% of 2,340", output_schema: star } }));
    expect(mcp).toMatchObject({ status: "completed", structured_answer: { value: "aaa" } });
  });
});

describe("an answer against ^(a|a)*$ (29 a's and a b) is judged at once on every path", () => {
  const schema = schemaWith("^(a|a)*$");
  const twice = [typed({ value: EXPONENTIAL }), typed({ value: EXPONENTIAL })];

  it("the CLI: the run fails with the pattern named (exit 1)", async () => {
    const directory = tempDir();
    const file = path.join(directory, "schema.json");
    writeFileSync(file, JSON.stringify(schema));
    const cli = await runCli(["run", "compute 17% of 2,340", "--output-schema", file], { cwd: directory, env: cliEnv(directory, "s.json", [...WORK, ...twice]) });
    expect(cli.code).toBe(1);
    expect(cli.stdout).toMatch(/at \/value: must match pattern "\^\(a\|a\)\*\$"/);
  });

  it("REST and MCP: the run fails naming the pattern, and another key's /health answers meanwhile", async () => {
    const app = await makeApp({ config: KEYS, steps: [...WORK, ...twice, ...WORK, ...twice] });
    const { value: view, polls } = await healthWhile(app, async () => {
      const accepted = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", headers: MALLORY, payload: { task: "compute 17% of 2,340", output_schema: schema } })).data;
      return waitForStatus(app, accepted.task_id, ["completed", "failed"], MALLORY);
    });
    expect(view.status).toBe("failed");
    expect(String(view.error)).toMatch(/at \/value: must match pattern "\^\(a\|a\)\*\$"/);
    expect(polls).toBeGreaterThan(0);
    const client = await mcpClient(await listen(app), { key: "key-mallory-666" });
    const { value: outcome } = await healthWhile(app, async () => structured<{ status: string; error: string }>(await client.callTool({ name: "run_task", arguments: { task: "compute 17% of 2,340", output_schema: schema } })));
    expect(outcome.status).toBe("failed");
    expect(outcome.error).toMatch(/must match pattern "\^\(a\|a\)\*\$"/);
  });

  it("MCP reads a completed answer back on the same linear engine: a pattern V8 backtracks on before it matches (main hung here)", async () => {
    // ^(?:(a|a)*b|a+)$ matches 30 a's by its second branch; V8 tries 2^30 ways through the first one first.
    const slow = schemaWith("^(?:(a|a)*b|a+)$");
    const app = await makeApp({ config: KEYS, steps: [...WORK, typed({ value: "a".repeat(30) })] });
    const client = await mcpClient(await listen(app), { key: "key-mallory-666" });
    const { value: outcome, polls } = await healthWhile(app, async () =>
      structured<{ status: string; structured_answer: unknown }>(await client.callTool({ name: "run_task", arguments: { task: "compute 17% of 2,340", output_schema: slow } })),
    );
    expect(outcome).toMatchObject({ status: "completed", structured_answer: { value: "a".repeat(30) } });
    expect(polls).toBeGreaterThan(0);
  });

  it('a "url" format runs in linear time: a crafted 100,000-character value is judged at once (cubic on main)', async () => {
    const crafted = `http://${":".repeat(100_000)}`;
    const urlSchema = { type: "object", properties: { link: { type: "string", format: "url" } }, required: ["link"] };
    const app = await makeApp({ config: KEYS, steps: [...WORK, typed({ link: crafted }), typed({ link: "https://example.com/report" })] });
    const { value: view, polls } = await healthWhile(app, async () => {
      const accepted = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", headers: MALLORY, payload: { task: "compute 17% of 2,340", output_schema: urlSchema } })).data;
      return waitForStatus(app, accepted.task_id, ["completed", "failed"], MALLORY);
    });
    // The crafted value was refused (must match format "url"), the repaired one taken.
    expect(view.status).toBe("completed");
    expect((view.result as { output?: unknown }).output).toEqual({ link: "https://example.com/report" });
    expect(app.model?.callsFor("synthesizer")[1]?.lastMessage).toMatch(/must match format "url"/);
    expect(polls).toBeGreaterThan(0);
  });
});
