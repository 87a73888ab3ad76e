import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isTroupeError } from "../../src/core/errors.js";
import { Troupe } from "../../src/runtime/engine.js";
import { envelope, makeApp } from "../server-helpers.js";

const SCHEMA = { type: "object", properties: { product: { type: "number" } }, required: ["product"] };

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe("a typed answer asked of the offline model", () => {
  it("is refused over HTTP before the task is queued (400 typed_answer_unsupported)", async () => {
    const app = await makeApp();
    const response = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 6*7", output_schema: SCHEMA } });
    expect(response.statusCode).toBe(400);
    expect(envelope(response).code).toBe("typed_answer_unsupported");
    expect(await app.troupe.store.runs.count({})).toBe(0);
  });

  it("is refused by the library, and by a prepared instance before it opens anything", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-typed-"));
    directories.push(directory);
    const options = { provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") };
    const prepared = await Troupe.prepare(options);
    expect(() => prepared.check({ task: "compute 6*7", outputSchema: SCHEMA })).toThrow(/writes none/);
    expect(readdirSync(directory)).toEqual([]);
    const troupe = await prepared.open();
    try {
      const caught = await troupe.run({ task: "compute 6*7", outputSchema: SCHEMA }).catch((error: unknown) => error);
      expect(isTroupeError(caught) && caught.code).toBe("typed_answer_unsupported");
      expect(await troupe.store.runs.count({})).toBe(0);
    } finally {
      await troupe.shutdown();
    }
  });
});
