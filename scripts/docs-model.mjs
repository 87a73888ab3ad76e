// What the docs describe, read from the code itself: the HTTP app built in-process (its OpenAPI
// document and every route Fastify registers) and the CLI's commander program. Needs
// `--import ./scripts/register-ts.mjs` (the sources are TypeScript; no build).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

/**
 * Builds the app on a throwaway data directory with the offline model, without listening.
 * Returns the OpenAPI document it serves at /openapi.json and each route as { methods, url }.
 */
export async function readHttpApp() {
  const { createApp, createLogger } = await import(path.join(root, "src/server/app.ts"));
  const { Troupe } = await import(path.join(root, "src/runtime/engine.ts"));
  const { parseEnv } = await import(path.join(root, "src/config/env.ts"));
  const directory = mkdtempSync(path.join(os.tmpdir(), "troupe-docs-"));
  // Nothing from the caller's shell or folder: no TROUPE_* variables, no config file, no MCP servers.
  const troupe = await Troupe.create({
    provider: "offline",
    env: parseEnv({}),
    config: {},
    toolsConfig: {},
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
  });
  const routes = [];
  try {
    const built = await createApp({
      troupe,
      config: { rateLimitPerMinute: 0, maxEventLoopDelayMs: 0 },
      logger: createLogger("silent"),
      onRoute: (route) => routes.push({ methods: [route.method].flat(), url: route.url }),
    });
    await built.app.ready();
    const response = await built.app.inject({ method: "GET", url: "/openapi.json" });
    if (response.statusCode !== 200) throw new Error(`GET /openapi.json answered ${response.statusCode}`);
    const document = response.json();
    await built.app.close();
    return { document, routes };
  } finally {
    troupe.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Every command and subcommand of the CLI: { name: "runs list", options: ["--json", …], arguments: [...] }. */
export async function readCli() {
  const { createProgram } = await import(path.join(root, "src/cli/program.ts"));
  const commands = [];
  const walk = (command, prefix) => {
    for (const child of command.commands) {
      const name = prefix ? `${prefix} ${child.name()}` : child.name();
      commands.push({
        name,
        description: child.description(),
        arguments: child.registeredArguments.map((argument) => ({ name: argument.name(), required: argument.required, variadic: argument.variadic })),
        options: child.options.map((option) => ({ long: option.long, short: option.short, flags: option.flags, description: option.description, defaultValue: option.defaultValue })),
        hasSubcommands: child.commands.length > 0,
      });
      walk(child, name);
    }
  };
  walk(createProgram(), "");
  return commands;
}

/**
 * Every key the config file's zod schemas accept, as dotted paths (`tools.fetch.allowHosts`,
 * `providers.<id>.baseUrl`, `agents[].capabilities`): the file's schema, its `tools` section's
 * (`ToolsConfig`, validated on its own) and its agents' (declared and remote).
 */
export async function readConfigKeys() {
  const config = await import(path.join(root, "src/config/config-file.ts"));
  const tools = await import(path.join(root, "src/config/tools-config.ts"));
  const keys = new Set();
  const walk = (schema, prefix, seen) => {
    if (!schema?.def || seen.has(schema)) return;
    seen = new Set(seen).add(schema);
    const def = schema.def;
    switch (def.type) {
      case "object":
        for (const [name, child] of Object.entries(def.shape)) {
          const key = prefix ? `${prefix}.${name}` : name;
          keys.add(key);
          walk(child, key, seen);
        }
        return;
      case "optional":
      case "nullable":
      case "default":
      case "prefault":
      case "readonly":
      case "catch":
      case "nonoptional":
        return walk(def.innerType, prefix, seen);
      case "array":
        return walk(def.element, `${prefix}[]`, seen);
      case "record":
        return walk(def.valueType, `${prefix}.<id>`, seen);
      case "pipe":
        walk(def.in, prefix, seen);
        return walk(def.out, prefix, seen);
      case "union":
        for (const option of def.options) walk(option, prefix, seen);
        return;
      case "lazy":
        return walk(def.getter(), prefix, seen);
      default:
        return;
    }
  };
  walk(config.TroupeConfig, "", new Set());
  walk(tools.ToolsConfig, "tools", new Set());
  walk(config.AgentConfig, "agents[]", new Set());
  walk(config.RemoteAgentConfig, "agents[]", new Set());
  return [...keys].sort();
}

/** The `TROUPE_*` environment variables the shipped sources read (tests' own left out). */
export function readEnvironmentVariables() {
  const names = new Set();
  const visit = (directory) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const full = path.join(directory, entry.name);
      if (entry.isDirectory()) visit(full);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts")) {
        for (const match of readFileSync(full, "utf8").matchAll(/\bTROUPE_[A-Z][A-Z0-9_]*\b/g)) names.add(match[0]);
      }
    }
  };
  visit(path.join(root, "src"));
  return [...names].sort();
}
