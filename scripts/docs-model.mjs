// What the docs describe, read from the code itself: the HTTP app built in-process (its OpenAPI
// document and every route Fastify registers) and the CLI's commander program. Needs
// `--import ./scripts/register-ts.mjs` (the sources are TypeScript; no build).
import { mkdtempSync, rmSync } from "node:fs";
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
  const directory = mkdtempSync(path.join(os.tmpdir(), "troupe-docs-"));
  const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
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
