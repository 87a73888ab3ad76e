import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "./config-file.js";
import { loadToolsConfig } from "./tools-config.js";

const made: string[] = [];
afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});
function directoryWith(files: Record<string, string>): string {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-tools-config-"));
  made.push(directory);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(directory, name)), { recursive: true });
    writeFileSync(path.join(directory, name), text);
  }
  return directory;
}

describe("the config file's tools section", () => {
  it("sits beside the other settings and is read by the same loader, from JSON or TypeScript", async () => {
    const json = directoryWith({ "troupe.config.json": '{ "provider": "offline", "budget": { "maxModelCalls": 9 }, "tools": { "execution": { "concurrency": 2 } } }' });
    expect((await loadConfig(json)).config).toMatchObject({ provider: "offline", budget: { maxModelCalls: 9 } });
    expect((await loadToolsConfig({ cwd: json })).config.execution.concurrency).toBe(2);
    const ts = directoryWith({ "troupe.config.ts": "const level: string = 'READ';\nexport default { tools: { permissions: { defaultLevel: level } } };\n" });
    const loaded = await loadToolsConfig({ cwd: ts });
    expect(loaded.file).toBe(path.join(ts, "troupe.config.ts"));
    expect(loaded.config.permissions.defaultLevel).toBe("READ");
  });

  it("resolves folders against the file's own folder, takes an explicit file, and names the field at fault", async () => {
    const directory = directoryWith({ "conf/troupe.config.json": '{ "tools": { "search": { "knowledge": ["notes"] } } }', "bad.json": '{ "tools": { "execution": { "concurrency": 0 } } }' });
    const loaded = await loadToolsConfig({ cwd: directory, file: "conf/troupe.config.json" });
    expect(loaded.config.search.knowledge).toEqual([path.join(directory, "conf", "notes")]);
    await expect(loadToolsConfig({ cwd: directory, file: "bad.json" })).rejects.toThrow(/bad\.json: tools\.execution\.concurrency: /);
    await expect(loadToolsConfig({ cwd: directory, env: { TROUPE_CONFIG: "missing.json" } })).rejects.toThrow(/missing\.json does not exist/);
    // Without a file, the defaults (knowledge/ in the working directory).
    expect((await loadToolsConfig({ cwd: directory })).config.search.knowledge).toEqual([path.join(directory, "knowledge")]);
  });
});
