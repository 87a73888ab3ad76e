import { setImmediate as nextTurn } from "node:timers/promises";
import type { LightMyRequestResponse } from "fastify";
import { describe, expect, it } from "vitest";
import type { EvalView } from "../src/server/schemas.js";
import { envelope, makeApp, type TestApp, waitFor } from "./server-helpers.js";

// One key submits what is a program in disguise (a pattern, a schema, a JSONPath); another key's
// /health is polled meanwhile. On main each of these held the event loop — for seconds or for
// ever — so these tests timed out there, or (uniqueItems) answered only after the loop was free.

const KEYS = { apiKeys: "alice:key-alice-123,mallory:key-mallory-666" };
const ALICE = { authorization: "Bearer key-alice-123" };
const MALLORY = { authorization: "Bearer key-mallory-666" };

interface HealthWhile<T> {
  value: T;
  /** /health polls answered while the work was in flight, and their latencies. */
  polls: number[];
}

/** Runs `work` and polls alice's /api/v1/health until it settles. */
async function healthWhile<T>(app: TestApp, work: () => Promise<T>): Promise<HealthWhile<T>> {
  let done = false;
  const polls: number[] = [];
  const poller = (async () => {
    while (!done) {
      const started = performance.now();
      const response = await app.app.inject({ method: "GET", url: "/api/v1/health", headers: ALICE });
      expect(response.statusCode).toBe(200);
      if (!done) polls.push(performance.now() - started);
      await nextTurn();
    }
  })();
  try {
    const value = await work();
    return { value, polls };
  } finally {
    done = true;
    await poller;
  }
}

const callTool = (app: TestApp, parameters: Record<string, unknown>): Promise<LightMyRequestResponse> =>
  app.app.inject({ method: "POST", url: "/api/v1/tools/call", headers: MALLORY, payload: { tool_name: "json", parameters } });

describe("nothing one key supplies holds the event loop for another", () => {
  it("an eval's answer_matches that backtracks for ever on V8 runs on RE2: the case is judged, and /health answers throughout", async () => {
    const app = await makeApp({ config: KEYS });
    const suite = JSON.stringify({ id: "redos", task: "compute 6*7", expect: { answer_matches: "^([\\s\\S]+)+\u0000$" } });
    const { value: view, polls } = await healthWhile(app, async () => {
      const accepted = envelope<{ eval_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/evals", headers: MALLORY, payload: { suite } })).data;
      return waitFor(async () => {
        const current = envelope<EvalView>(await app.app.inject({ method: "GET", url: `/api/v1/evals/${accepted.eval_id}`, headers: MALLORY })).data;
        return current.status === "completed" ? current : undefined;
      }, "the eval to finish");
    });
    expect(view.cases[0]?.failures).toEqual([{ expectation: "answer_matches", message: expect.stringMatching(/^the answer does not match/) }]);
    expect(polls.length).toBeGreaterThan(0);
  });

  it("a suite whose pattern needs backtracking (a backreference) is refused up front, naming why", async () => {
    const app = await makeApp({ config: KEYS });
    const suite = JSON.stringify({ id: "backref", task: "compute 6*7", expect: { answer_matches: "(\\d)\\1" } });
    const response = await app.app.inject({ method: "POST", url: "/api/v1/evals", headers: MALLORY, payload: { suite } });
    expect(response.statusCode).toBe(400);
    expect(envelope(response).message).toMatch(/answer_matches: is not a regular expression troupe can run: .*backreferences cannot run in linear time/);
  });

  it("the json tool's schema pattern and patternProperties run on RE2 (its 5 s timeout did not stop ^(a+)+$ on main)", async () => {
    const app = await makeApp({ config: KEYS });
    const text = JSON.stringify(`${"a".repeat(60)}!`);
    const { value: pattern } = await healthWhile(app, () => callTool(app, { operation: "validate", text, schema: { type: "string", pattern: "^(a+)+$" } }));
    expect(envelope<{ result: { valid: boolean; error: string } }>(pattern).data.result).toMatchObject({ valid: false, error: expect.stringContaining('must match pattern "^(a+)+$"') });
    const keyed = JSON.stringify({ [`${"a".repeat(60)}!`]: "x" });
    const schema = { type: "object", patternProperties: { "^(a+)+$": { type: "number" } }, additionalProperties: false };
    const { value: properties } = await healthWhile(app, () => callTool(app, { operation: "validate", text: keyed, schema }));
    expect(envelope<{ result: { valid: boolean } }>(properties).data.result.valid).toBe(false);
    const lookahead = await callTool(app, { operation: "validate", text, schema: { type: "string", pattern: "(?=a)" } });
    expect([lookahead.statusCode, envelope(lookahead).code]).toEqual([400, "invalid_schema"]);
  });

  it("a schema whose validation is quadratic runs in a worker stopped at the tool's timeout, while /health answers", async () => {
    const app = await makeApp({ config: { ...KEYS, bodyLimitBytes: 2 * 1024 * 1024 } });
    // uniqueItems compares every pair: 40,000 distinct objects are 800 million deep comparisons.
    const text = JSON.stringify(Array.from({ length: 40_000 }, (_, index) => ({ index })));
    const { value: response, polls } = await healthWhile(app, () => callTool(app, { operation: "validate", text, schema: { type: "array", uniqueItems: true } }));
    expect([response.statusCode, envelope(response).code]).toEqual([504, "timeout"]);
    expect(envelope(response).message).toMatch(/did not finish within 5000 ms/);
    // Polls were answered while the worker ran: on main the loop was held until the check ended.
    expect(polls.length).toBeGreaterThan(5);
    // The tool still works afterwards (a new worker).
    const after = await callTool(app, { operation: "query", text: JSON.stringify({ a: [1, 2] }), path: "$.a[*]" });
    expect(envelope<{ result: { matches: unknown[] } }>(after).data.result.matches).toEqual([1, 2]);
  });

  it("a JSONPath is linear in its length and bounded on the data: a long dotted path, a descent bomb, a filter that calls", async () => {
    const app = await makeApp({ config: KEYS });
    let nested: unknown = 1;
    for (let depth = 0; depth < 400; depth += 1) nested = { a: nested };
    const text = JSON.stringify(nested);
    // 200,000 characters (the body limit is 256 KB): quadratic on jsonpath-plus, about 20 s.
    const { value: dotted } = await healthWhile(app, () => callTool(app, { operation: "query", text, path: `$${".a".repeat(100_000)}` }));
    expect(envelope<{ result: { matches: unknown[] } }>(dotted).data.result.matches).toEqual([]);
    // $..a..a..a..a on 400 nested objects: billions of matches on jsonpath-plus.
    const { value: bomb } = await healthWhile(app, () => callTool(app, { operation: "query", text, path: "$..a..a..a..a" }));
    // Stopped by its step budget (or, on a machine loaded enough, by the worker's deadline).
    expect([[400, "path_too_costly"], [504, "timeout"]]).toContainEqual([bomb.statusCode, envelope(bomb).code]);
    const calls = await callTool(app, { operation: "query", text: JSON.stringify([{ name: "a".repeat(40) }]), path: "$[?(@.name.match(/^(a+)+$/))]" });
    expect([calls.statusCode, envelope(calls).code]).toEqual([400, "invalid_path"]);
  });
});
