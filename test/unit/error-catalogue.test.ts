import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { exitCodeForError } from "../../src/cli/exit-codes.js";
import { type CatalogueCode, ERROR_CODES } from "../../src/core/error-codes.js";
import { TroupeError } from "../../src/core/errors.js";
import { installErrorHandler } from "../../src/server/error-handler.js";
import { LIMITS } from "../../src/core/limits.js";
import { planStep, subtask } from "../../src/testing/script.js";
import { envelope, makeApp } from "../server-helpers.js";

const codes = Object.keys(ERROR_CODES) as CatalogueCode[];

describe("the catalogue is where the server's statuses and the CLI's exit codes come from", () => {
  it("answers every code with its status in the envelope, with Retry-After and WWW-Authenticate where they belong", async () => {
    const app = Fastify({ logger: false });
    installErrorHandler(app);
    app.get("/fail/:code", async (request) => {
      const { code } = request.params as { code: CatalogueCode };
      throw new TroupeError(code, `failed with ${code}`, code === "rate_limited" ? { retryAfterSeconds: 2.5 } : {});
    });
    try {
      for (const code of codes) {
        const response = await app.inject({ method: "GET", url: `/fail/${code}` });
        expect([code, response.statusCode, envelope(response)]).toEqual([code, ERROR_CODES[code].status, { code, message: `failed with ${code}`, data: code === "rate_limited" ? { retryAfterSeconds: 2.5 } : null }]);
        expect(response.headers["www-authenticate"] !== undefined, code).toBe(ERROR_CODES[code].status === 401);
      }
      expect((await app.inject({ method: "GET", url: "/fail/rate_limited" })).headers["retry-after"]).toBe("3");
      const missing = await app.inject({ method: "GET", url: "/nowhere" });
      expect([missing.statusCode, envelope(missing).code]).toEqual([404, "route_not_found"]);
    } finally {
      await app.close();
    }
  });

  it("exits the CLI with every code's exit code", () => {
    for (const code of codes) expect([code, exitCodeForError(new TroupeError(code, "x"))]).toEqual([code, ERROR_CODES[code].exit]);
    expect(exitCodeForError(new Error("not a troupe error"))).toBe(1);
  });

  it("answers a failed tool call on POST /api/v1/tools/call with its code's status: the caller's arguments 400, a denial 403", async () => {
    const { app } = await makeApp();
    const call = async (body: Record<string, unknown>) => {
      const response = await app.inject({ method: "POST", url: "/api/v1/tools/call", payload: body });
      return [response.statusCode, envelope(response).code];
    };
    expect(await call({ tool_name: "file_read", parameters: { path: " " } })).toEqual([400, "invalid_path"]);
    expect(await call({ tool_name: "file_read", parameters: { path: "../outside.txt" } })).toEqual([422, "path_outside_workspace"]);
    expect(await call({ tool_name: "file_write", agent: "research", parameters: { path: "x.txt", content: "y" } })).toEqual([403, "permission_denied"]);
    expect(await call({ tool_name: "file_read", parameters: { nope: 1 } })).toEqual([400, "invalid_arguments"]);
    expect(await call({ tool_name: "file_read", parameters: { path: "missing.txt" } })).toEqual([422, "not_found"]);
  });

  it("answers a plan the planner keeps getting wrong with planner_failed (502), not the code of a caller's bad plan (invalid_plan, 400)", async () => {
    const wrong = planStep([subtask("s1", "nobody", "done by an agent that does not exist")]);
    const { app } = await makeApp({ steps: Array.from({ length: LIMITS.planRepairAttempts + 1 }, () => wrong) });
    const response = await app.inject({ method: "POST", url: "/api/v1/plan", payload: { task: "plan something" } });
    expect([response.statusCode, envelope(response).code]).toEqual([502, "planner_failed"]);
    expect(envelope(response).message).toMatch(/nobody/);
  });
});
