import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "./config-file.js";

const made: string[] = [];
afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});
function directoryWith(files: Record<string, string>): string {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-config-"));
  made.push(directory);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(directory, name), text);
  return directory;
}

describe("loadConfig", () => {
  it("is empty without a file, and reads troupe.config.json before troupe.config.ts", async () => {
    expect(await loadConfig(directoryWith({}))).toEqual({ config: {}, file: undefined });
    const directory = directoryWith({ "troupe.config.json": '{ "provider": "openai" }', "troupe.config.ts": "export default { provider: 'anthropic' };" });
    expect((await loadConfig(directory)).config).toEqual({ provider: "openai" });
  });

  it("loads a TypeScript config's default export and validates it", async () => {
    const directory = directoryWith({
      "troupe.config.ts": [
        "const roles: Record<string, string> = { planner: 'openai:gpt-4.1' };",
        "export default { provider: 'openai:gpt-4o-mini', roles, fallbacks: ['anthropic', 'offline'], budget: { maxCostUsd: 0.5 },",
        "  providers: { deepseek: { type: 'openai-compatible', baseUrl: 'https://api.deepseek.com/v1', apiKeyEnv: 'DEEPSEEK_API_KEY' } },",
        "  prices: { 'deepseek-chat': { input: 0.28, output: 0.42 } } };",
      ].join("\n"),
    });
    const { config, file } = await loadConfig(directory);
    expect(file).toBe(path.join(directory, "troupe.config.ts"));
    expect(config.roles).toEqual({ planner: "openai:gpt-4.1" });
    expect(config.providers?.deepseek?.apiKeyEnv).toBe("DEEPSEEK_API_KEY");
  });

  it("names the file and the setting of an invalid config, and refuses a named file that is missing", async () => {
    await expect(loadConfig(directoryWith({ "troupe.config.json": '{ "budget": { "maxTokens": 0 } }' }))).rejects.toThrow(/troupe\.config\.json: budget\.maxTokens: maxTokens must be at least 1/);
    await expect(loadConfig(directoryWith({ "troupe.config.json": '{ "providers": { "x": { "apiKey": "sk-secret" } } }' }))).rejects.toThrow(/providers\.x: Unrecognized key: "apiKey"/);
    await expect(loadConfig(directoryWith({ "troupe.config.ts": "export const notDefault = 1;" }))).rejects.toThrow(/has no default export/);
    await expect(loadConfig(directoryWith({}), "other.json")).rejects.toThrow(/the config file .*other\.json does not exist \(--config or TROUPE_CONFIG\)/);
  });

  it("reads a remote (A2A) agent by its card URL, with its defaults, and names what is wrong in one", async () => {
    const { config } = await loadConfig(directoryWith({ "troupe.config.json": JSON.stringify({ agents: [{ name: "helper", a2a: "https://agent.example/.well-known/agent-card.json" }] }) }));
    expect(config.agents).toEqual([{ name: "helper", a2a: "https://agent.example/.well-known/agent-card.json", level: "EXECUTE", risk: "medium", timeoutMs: 600_000, optional: false, trusted: false }]);
    await expect(loadConfig(directoryWith({ "troupe.config.json": JSON.stringify({ agents: [{ name: "helper", a2a: "ftp://agent.example/card" }] }) }))).rejects.toThrow(
      /troupe\.config\.json: agents\.0\.a2a: a2a is the http\(s\) URL of the agent's card/,
    );
    await expect(loadConfig(directoryWith({ "troupe.config.json": JSON.stringify({ agents: [{ name: "helper", a2a: "https://a.example/card", prompt: "x" }] }) }))).rejects.toThrow(/agents\.0: Unrecognized key: "prompt"/);
    // A local agent is read as before: its own errors, in its own words.
    await expect(loadConfig(directoryWith({ "troupe.config.json": JSON.stringify({ agents: [{ name: "helper", description: "d" }] }) }))).rejects.toThrow(/agents\.0\.prompt: /);
  });

  it("reads task templates with their defaults, and names the setting of a bad one", async () => {
    const template = { name: "percent", description: "A percentage", task: "compute {{share}} of {{amount}}", arguments: [{ name: "share", values: ["17%"] }, { name: "amount", complete: "runs" }] };
    const { config } = await loadConfig(directoryWith({ "troupe.config.json": JSON.stringify({ taskTemplates: [template] }) }));
    expect(config.taskTemplates?.[0]?.arguments).toEqual([
      { name: "share", values: ["17%"], required: true, maxLength: 1_000 },
      { name: "amount", complete: "runs", required: true, maxLength: 1_000 },
    ]);
    await expect(loadConfig(directoryWith({ "troupe.config.json": JSON.stringify({ taskTemplates: [{ ...template, task: "compute {{share}}" }] }) }))).rejects.toThrow(
      /troupe\.config\.json: taskTemplates\.0\.arguments\.1\.name: the argument "amount" is not used in the task/,
    );
    await expect(loadConfig(directoryWith({ "troupe.config.json": JSON.stringify({ taskTemplates: [{ ...template, arguments: [{ name: "share", complete: "files" }, { name: "amount" }] }] }) }))).rejects.toThrow(
      /taskTemplates\.0\.arguments\.0\.complete: /,
    );
  });
});
