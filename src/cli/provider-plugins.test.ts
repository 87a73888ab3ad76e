import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadProviderModules } from "./provider-plugins.js";

/** A folder with one plugin module per entry (name → source). */
function modules(files: Record<string, string>): string {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-plugins-"));
  for (const [name, source] of Object.entries(files)) writeFileSync(path.join(directory, name), source);
  return directory;
}

const PROVIDER = (id: string): string => `{ id: "${id}", description: "${id}", createModel: () => { throw new Error("not in this test"); } }`;

describe("provider plugin modules (TROUPE_PROVIDER_MODULES)", () => {
  it("loads every module's providers, by relative or absolute path, in order", async () => {
    const directory = modules({ "a.mjs": `export const providers = [${PROVIDER("alpha")}, ${PROVIDER("beta")}];`, "b.mjs": `export const providers = [${PROVIDER("gamma")}];` });
    const loaded = await loadProviderModules(` ./a.mjs , ${path.join(directory, "b.mjs")},`, directory);
    expect(loaded.map((provider) => provider.id)).toEqual(["alpha", "beta", "gamma"]);
    expect(await loadProviderModules(undefined, directory)).toEqual([]);
  });

  it("refuses a module it cannot load, one without `providers`, and a provider that cannot make a model: invalid_config, naming the module", async () => {
    const directory = modules({
      "none.mjs": "export const other = 1;",
      "empty.mjs": "export const providers = [];",
      "half.mjs": 'export const providers = [{ id: "half" }];',
      "broken.mjs": "export const providers = [;",
    });
    const refusal = (specifier: string) => loadProviderModules(specifier, directory).then(() => undefined, (error: unknown) => error);
    expect(await refusal("./missing.mjs")).toMatchObject({ code: "invalid_config", message: expect.stringMatching(/^TROUPE_PROVIDER_MODULES: the module \.\/missing\.mjs cannot be loaded/), data: { module: "./missing.mjs" } });
    expect(await refusal("no-such-package-for-troupe")).toMatchObject({ code: "invalid_config", data: { module: "no-such-package-for-troupe" } });
    expect(await refusal("./broken.mjs")).toMatchObject({ code: "invalid_config", message: expect.stringContaining("cannot be loaded") });
    for (const name of ["./none.mjs", "./empty.mjs"]) expect(await refusal(name)).toMatchObject({ code: "invalid_config", message: expect.stringContaining("does not export `providers`") });
    expect(await refusal("./half.mjs")).toMatchObject({ code: "invalid_config", message: expect.stringContaining("without an `id` and a `createModel` function") });
  });

  it("loads the scripted provider's own module, as the tests' child processes do", async () => {
    const source = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../testing/scripted-provider.ts");
    const [scripted] = await loadProviderModules(source);
    expect(scripted).toMatchObject({ id: "scripted", defaultModel: "script" });
  });
});
