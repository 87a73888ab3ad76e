import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigError } from "../core/errors.js";
import type { ProviderDefinition } from "../providers/provider.js";

/**
 * The providers of the modules named in TROUPE_PROVIDER_MODULES (comma-separated): the CLI's
 * plugin hook, so a provider troupe does not ship — the scripted one of `troupe/testing`, a
 * company's own gateway — runs under `--provider <id>` without troupe importing it. A module is
 * a file path (relative to `cwd`) or a package name, and exports `providers`, a list of
 * `defineProvider` results. Anything else is `invalid_config` (exit 2), naming the module.
 */
export async function loadProviderModules(list: string | undefined, cwd = process.cwd()): Promise<ProviderDefinition[]> {
  const loaded: ProviderDefinition[] = [];
  for (const specifier of (list ?? "").split(",").map((item) => item.trim()).filter(Boolean)) {
    loaded.push(...(await loadProviderModule(specifier, cwd)));
  }
  return loaded;
}

async function loadProviderModule(specifier: string, cwd: string): Promise<ProviderDefinition[]> {
  const fail = (reason: string): ConfigError =>
    new ConfigError("invalid_config", `TROUPE_PROVIDER_MODULES: the module ${specifier} ${reason}`, { variable: "TROUPE_PROVIDER_MODULES", module: specifier });
  // A path is anything that looks like one or names an existing file; the rest are package names.
  const file = path.resolve(cwd, specifier);
  const isPath = path.isAbsolute(specifier) || specifier.startsWith(".") || existsSync(file);
  let exported: Record<string, unknown>;
  try {
    exported = (await import(isPath ? pathToFileURL(file).href : specifier)) as Record<string, unknown>;
  } catch (error) {
    throw fail(`cannot be loaded: ${(error as Error).message}`);
  }
  const providers = exported.providers;
  if (!Array.isArray(providers) || providers.length === 0) throw fail("does not export `providers`, a non-empty list of providers");
  for (const provider of providers as unknown[]) {
    const candidate = provider as Partial<ProviderDefinition> | null;
    if (typeof candidate !== "object" || candidate === null || typeof candidate.id !== "string" || typeof candidate.createModel !== "function") {
      throw fail("exports a provider without an `id` and a `createModel` function");
    }
  }
  return providers as ProviderDefinition[];
}
