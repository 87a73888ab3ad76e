/** Output helpers: results on stdout, everything else on stderr. */

export function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function err(text: string): void {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function printJson(value: unknown): void {
  out(JSON.stringify(value, null, 2));
}

const useColor = process.stderr.isTTY && !process.env.NO_COLOR;
const paint = (code: string) => (text: string) => (useColor ? `\u001b[${code}m${text}\u001b[0m` : text);
export const color = { dim: paint("2"), green: paint("32"), red: paint("31"), yellow: paint("33"), cyan: paint("36"), bold: paint("1") };

export function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Parses a whole number flag, leaving range checks to the schema that owns them. */
export function parseNumberFlag(value: string): number {
  const number = Number(value);
  return value.trim() === "" ? Number.NaN : number;
}
