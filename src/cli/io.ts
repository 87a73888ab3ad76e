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

/**
 * Everything on stdin as UTF-8 text, up to `maxBytes`: more is refused (the rest is not read),
 * and a terminal is refused too (it would wait for input nobody means to type).
 */
export async function readStdin(maxBytes: number, what = "input"): Promise<string> {
  const { InputError } = await import("../core/errors.js");
  if (process.stdin.isTTY) throw new InputError("stdin_is_terminal", `reading the ${what} from stdin, but stdin is a terminal: pipe it in (echo "…" | troupe …)`);
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    bytes += buffer.length;
    if (bytes > maxBytes) {
      process.stdin.destroy();
      throw new InputError("stdin_too_large", `the ${what} on stdin is larger than ${maxBytes} bytes`);
    }
    chunks.push(buffer);
  }
  return new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(chunks));
}
