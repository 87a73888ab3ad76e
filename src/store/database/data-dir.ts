import { closeSync, existsSync, openSync, statSync, unlinkSync } from "node:fs";
import path from "node:path";
import { ensureDirectorySync } from "../../core/user-files.js";
import { ConfigError } from "../../core/errors.js";

/** Proves a directory is writable by creating and removing an empty file (access() lies for root). */
function probeWritable(directory: string): boolean {
  const probe = path.join(directory, `.troupe-write-probe-${process.pid}`);
  try {
    closeSync(openSync(probe, "wx"));
    unlinkSync(probe);
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks the data directory can be used, creating it if `create` is set. Nothing is left behind
 * when the directory cannot be written or created.
 */
export function prepareDataDir(directory: string, create: boolean): string {
  const resolved = path.resolve(directory);
  if (existsSync(resolved)) {
    if (!statSync(resolved).isDirectory()) {
      throw new ConfigError("data_dir_invalid", `the data directory ${resolved} is not a directory`, { path: resolved });
    }
    if (!probeWritable(resolved)) {
      throw new ConfigError("data_dir_unwritable", `the data directory ${resolved} is not writable`, { path: resolved });
    }
    return resolved;
  }
  if (!create) return resolved;
  try {
    ensureDirectorySync(resolved);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError("data_dir_unwritable", `the data directory ${resolved} cannot be created (${reason})`, { path: resolved });
  }
  if (!probeWritable(resolved)) {
    throw new ConfigError("data_dir_unwritable", `the data directory ${resolved} is not writable`, { path: resolved });
  }
  return resolved;
}
