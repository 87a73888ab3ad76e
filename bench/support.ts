import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The built `scripted` provider, as the CLI loads it (TROUPE_PROVIDER_MODULES) for `TROUPE_PROVIDER=scripted`. */
export const SCRIPTED_PROVIDER_MODULE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/testing/scripted-provider.js");

/** Order statistics of a series of measurements. */
export interface Summary {
  count: number;
  median: number;
  p95: number;
  min: number;
  max: number;
}

/** The value at `fraction` of the sorted series (nearest rank), so p95 of 20 runs is the 19th. */
export function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(fraction * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export function summarize(values: number[]): Summary {
  const sorted = [...values].sort((left, right) => left - right);
  return {
    count: sorted.length,
    median: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    min: sorted[0] ?? Number.NaN,
    max: sorted.at(-1) ?? Number.NaN,
  };
}

/** Divides every figure of a summary, e.g. run times into times per model call. */
export function scaleSummary(summary: Summary, divisor: number): Summary {
  return {
    count: summary.count,
    median: summary.median / divisor,
    p95: summary.p95 / divisor,
    min: summary.min / divisor,
    max: summary.max / divisor,
  };
}

/** Runs `body` with a fresh temporary directory and removes the directory afterwards, whatever happens. */
export async function withTempDir<T>(prefix: string, body: (directory: string) => Promise<T>): Promise<T> {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  try {
    return await body(directory);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Milliseconds taken by `body`, measured with the monotonic clock. */
export async function timed<T>(body: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await body();
  return { value, ms: performance.now() - started };
}

/**
 * The bytes this process has handed to write() so far (Linux `/proc/self/io` wchar), or
 * undefined where that file does not exist. It counts what SQLite writes, whatever the file
 * system caches, which is what a per-step write cost should show.
 */
export async function processWrittenBytes(): Promise<number | undefined> {
  try {
    const text = await readFile("/proc/self/io", "utf8");
    const match = /^wchar:\s*(\d+)$/m.exec(text);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Rounds for display: two decimals under 10, one under 100, none above. */
export function formatNumber(value: number | undefined): string {
  if (value === undefined || Number.isNaN(value)) return "n/a";
  const magnitude = Math.abs(value);
  const digits = magnitude < 10 ? 2 : magnitude < 100 ? 1 : 0;
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A plain-text table with a header rule; the first column is left-aligned, the others right-aligned. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? "").length)));
  const line = (row: string[]) =>
    row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join("  ").trimEnd();
  const rule = widths.map((width) => "-".repeat(width)).join("  ");
  return [line(header), rule, ...rows.map(line)].join("\n");
}
