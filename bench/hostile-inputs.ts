/**
 * Hostile inputs: one API key submits what is a program in disguise — an eval pattern that
 * backtracks for ever on V8, a JSON Schema pattern and patternProperties of the same kind, a
 * schema whose validation is quadratic, a 200,000-character dotted JSONPath, a recursive-descent
 * bomb, a filter that calls a method, a configured MCP server's exponential input schema — while
 * another key polls `/api/v1/health`. Each kind's
 * /health p99 is what that key saw while it ran (issue 21: on main, 15–18 of 16–19 polls timed out).
 */
import { writeFileSync } from "node:fs";
import { Agent } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { call, type Reply } from "./api-client.js";
import { startServer } from "./server.js";
import { formatNumber as number, formatTable, percentile, withTempDir } from "./support.js";

export const HEALTH_P99_TARGET_MS = 100;

/** A real MCP server whose tool schemas are hostile (a recursive anyOf of 2^depth steps; a backtracking output pattern). */
const HOSTILE_MCP = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../test/fixtures/mcp-hostile-schema-server.mjs");

const MALLORY = "key-mallory-666";
const ALICE = "key-alice-123";

export interface HostileKind {
  kind: string;
  /** What the hostile request ended with (HTTP status and code, or the eval's verdict). */
  outcome: string;
  durationMs: number;
  health: { polls: number; p99Ms: number; maxMs: number };
}

export interface HostileInputsReport {
  baseline: { polls: number; p99Ms: number };
  kinds: HostileKind[];
  target: { healthP99Ms: number; met: boolean };
}

/** Polls alice's /api/v1/health until `work` settles; the round trips, in ms. */
async function pollWhile<T>(agent: Agent, port: number, work: () => Promise<T>): Promise<{ value: T; rounds: number[] }> {
  let done = false;
  const rounds: number[] = [];
  const poller = (async () => {
    while (!done) {
      const started = performance.now();
      await call(agent, port, ALICE, "GET", "/api/v1/health");
      rounds.push(performance.now() - started);
      await sleep(10);
    }
  })();
  try {
    return { value: await work(), rounds };
  } finally {
    done = true;
    await poller;
  }
}

const p99 = (rounds: number[]): number => percentile([...rounds].sort((left, right) => left - right), 0.99);

export async function measureHostileInputs(): Promise<HostileInputsReport> {
  return withTempDir("troupe-bench-hostile-", async (directory) => {
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { mcp: { servers: { hostile: { command: process.execPath, args: [HOSTILE_MCP], timeoutMs: 4_000 } } } } }));
    const server = await startServer(directory, { TROUPE_DATA_DIR: path.join(directory, "data"), TROUPE_PROVIDER: "offline", TROUPE_API_KEYS: `alice:${ALICE},mallory:${MALLORY}` });
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const port = server.port;
    try {
      // Ordinary work first, so what loads once per process (the engine's first run, the json worker) is not what is measured.
      const warm = await call(agent, port, MALLORY, "POST", "/api/v1/evals", { suite: JSON.stringify({ id: "warm", task: "compute 1+1" }) });
      const warmId = (warm.data as { eval_id: string }).eval_id;
      for (let wait = 0; wait < 600; wait += 1) {
        const status = ((await call(agent, port, MALLORY, "GET", `/api/v1/evals/${warmId}`)).data as { status: string }).status;
        if (["completed", "failed", "cancelled"].includes(status)) break;
        await sleep(50);
      }
      await call(agent, port, MALLORY, "POST", "/api/v1/tools/call", { tool_name: "json", parameters: { text: "[1]", schema: { type: "array", items: { type: "number" } } } });
      const baseline = await pollWhile(agent, port, () => sleep(1_000));
      let nested: unknown = 1;
      for (let depth = 0; depth < 400; depth += 1) nested = { a: nested };
      const deep = JSON.stringify(nested);
      const json = (parameters: Record<string, unknown>) => () => call(agent, port, MALLORY, "POST", "/api/v1/tools/call", { tool_name: "json", parameters });
      const answered = (reply: Reply): string => `${reply.status} ${reply.body.code ?? ""}`;
      const mcp = (parameters: Record<string, unknown>) => call(agent, port, MALLORY, "POST", "/api/v1/tools/call", { tool_name: "hostile.walk", parameters });
      const deepTree = (depth: number): Record<string, unknown> => {
        let tree: Record<string, unknown> = {};
        for (let level = 0; level < depth; level += 1) tree = { next: tree };
        return tree;
      };
      /** Runs an eval of three cases, with or without the pattern, and says how it ended. */
      const evalOf = async (pattern: string | undefined): Promise<string> => {
        const suite = [1, 2, 3].map((index) => JSON.stringify({ id: `c${index}`, task: `compute ${index}*7`, ...(pattern ? { expect: { answer_matches: pattern } } : {}) })).join("\n");
        const accepted = await call(agent, port, MALLORY, "POST", "/api/v1/evals", { suite, concurrency: 1 });
        const id = (accepted.body.data as { eval_id: string }).eval_id;
        for (;;) {
          const view = await call(agent, port, MALLORY, "GET", `/api/v1/evals/${id}`);
          const data = view.body.data as { status: string; passed: number; failed: number };
          if (["completed", "failed", "cancelled"].includes(data.status)) return `${data.status}: ${data.passed} passed, ${data.failed} failed`;
          await sleep(50);
        }
      };
      const kinds: Array<{ kind: string; run: () => Promise<string> }> = [
        { kind: "(control) an ordinary eval of 3 cases", run: () => evalOf(undefined) },
        { kind: "eval of 3 cases, answer_matches ^([\\s\\S]+)+\\u0000$", run: () => evalOf("^([\\s\\S]+)+\u0000$") },
        { kind: "(control) an ordinary json validate", run: async () => answered(await json({ text: JSON.stringify("aaa"), schema: { type: "string", pattern: "^a+$" } })()) },
        { kind: "json schema pattern ^(a+)+$", run: async () => answered(await json({ text: JSON.stringify(`${"a".repeat(60)}!`), schema: { type: "string", pattern: "^(a+)+$" } })()) },
        { kind: "json patternProperties ^(a+)+$", run: async () => answered(await json({ text: JSON.stringify({ [`${"a".repeat(60)}!`]: 1 }), schema: { type: "object", patternProperties: { "^(a+)+$": { type: "string" } } } })()) },
        { kind: "json uniqueItems over 20,000 lists", run: async () => answered(await json({ text: JSON.stringify(Array.from({ length: 20_000 }, (_, index) => [index])), schema: { type: "array", uniqueItems: true } })()) },
        { kind: "JSONPath $.a.a.a… (200,000 characters)", run: async () => answered(await json({ operation: "query", text: deep, path: `$${".a".repeat(100_000)}` })()) },
        { kind: "JSONPath $..a..a..a..a on 400 levels", run: async () => answered(await json({ operation: "query", text: deep, path: "$..a..a..a..a" })()) },
        { kind: "JSONPath filter calling match(/^(a+)+$/)", run: async () => answered(await json({ operation: "query", text: JSON.stringify([{ name: "a".repeat(60) }]), path: "$[?(@.name.match(/^(a+)+$/))]" })()) },
        { kind: "(control) an MCP tool call, its schema's check in a worker", run: async () => answered(await mcp({ tree: { x: 1 } })) },
        { kind: "MCP tool input schema: recursive anyOf, 2^40 steps", run: async () => answered(await mcp({ tree: deepTree(40) })) },
      ];
      const results: HostileKind[] = [];
      for (const { kind, run } of kinds) {
        const started = performance.now();
        const { value, rounds } = await pollWhile(agent, port, run);
        results.push({ kind, outcome: value, durationMs: performance.now() - started, health: { polls: rounds.length, p99Ms: p99(rounds), maxMs: Math.max(...rounds) } });
      }
      const met = results.filter((result) => !result.kind.startsWith("(control)")).every((result) => result.health.p99Ms < HEALTH_P99_TARGET_MS);
      return { baseline: { polls: baseline.rounds.length, p99Ms: p99(baseline.rounds) }, kinds: results, target: { healthP99Ms: HEALTH_P99_TARGET_MS, met } };
    } finally {
      agent.destroy();
      await server.stop();
    }
  });
}

export function hostileInputsSection(report: HostileInputsReport): string {
  const table = formatTable(
    ["what mallory submits", "answer", "took ms", "alice's /health polls", "p99 ms", "max ms"],
    report.kinds.map((kind) => [kind.kind, kind.outcome, number(kind.durationMs), String(kind.health.polls), number(kind.health.p99Ms), number(kind.health.maxMs)]),
  );
  return [
    "20. Hostile inputs: one key submits programs in disguise while another key polls /api/v1/health every 10 ms (troupe serve, offline model,",
    "    warmed by one ordinary eval and json call).",
    `    baseline with nothing submitted: ${report.baseline.polls} polls, p99 ${number(report.baseline.p99Ms)} ms`,
    "",
    table,
    "",
    "    (an eval's figures include its case runs' own work, which the control row measures without the pattern)",
    `    target: every hostile kind's /health p99 < ${report.target.healthP99Ms} ms → ${report.target.met ? "MET" : "MISSED"}`,
  ].join("\n");
}
