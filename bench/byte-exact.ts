/**
 * The byte-exact matrix: files of 1 B to 15 MB — text with trailing whitespace, CRLF, UTF-8
 * multibyte characters and control bytes, and bytes that are not UTF-8 at all — go through the
 * offline model's plans with the CLI, as a user would run them: "read A and save it to B" (a
 * worker reads, its result flows through the stash by reference, another worker writes it) and
 * "copy A to B" (file_copy). The copy must match the original byte for byte (`cmp`); a file that
 * is not text cannot be "read and saved" as text, so that case must fail clearly without
 * writing anything. Shared by `npm run bench` and the test suite.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface ByteExactCase {
  name: string;
  bytes: number;
  /** Bytes that are not valid UTF-8 (a binary file). */
  binary: boolean;
  task: "read-and-save" | "copy";
}

export const MATRIX_SIZES = [1, 5 * 1024, 8_900, 1024 * 1024, 15 * 1024 * 1024] as const;

/** Every size as text both ways, and a binary file both ways. */
export function byteExactCases(sizes: readonly number[] = MATRIX_SIZES): ByteExactCase[] {
  const cases: ByteExactCase[] = [];
  for (const bytes of sizes) {
    for (const task of ["read-and-save", "copy"] as const) cases.push({ name: `${task} ${label(bytes)} text`, bytes, binary: false, task });
  }
  for (const task of ["read-and-save", "copy"] as const) cases.push({ name: `${task} 64 KB binary`, bytes: 64 * 1024, binary: true, task });
  return cases;
}

function label(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${bytes / (1024 * 1024)} MB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KB`;
  return `${bytes} B`;
}

/** A deterministic generator (xorshift), so every run makes the same files. */
function generator(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
}

const PIECES = ["alpha", "beta", "ünïcödé", "中文字", "😀", "tab\there", "ctl\u0001\u0002\u001b\u007f", "nul\u0000byte", "quote\"and\\slash"];
const ENDINGS = ["\n", "\r\n", "  \n", "\t\r\n", " "];

/**
 * Exactly `bytes` bytes. Text is valid UTF-8 with every kind of character the data flow must
 * keep, and ends in whitespace; binary has bytes that never occur in UTF-8 (0xC0, 0xFF, lone
 * continuation bytes).
 */
export function byteExactContent(bytes: number, binary: boolean, seed = bytes): Buffer {
  const random = generator(seed * 2_654_435_761);
  if (binary) {
    const buffer = Buffer.alloc(bytes);
    for (let index = 0; index < bytes; index += 1) buffer[index] = Math.floor(random() * 256);
    buffer[0] = 0xff;
    if (bytes > 1) buffer[1] = 0xc0;
    return buffer;
  }
  if (bytes === 1) return Buffer.from(" ");
  const parts: Buffer[] = [];
  let length = 0;
  while (length < bytes) {
    const piece = Buffer.from(`${PIECES[Math.floor(random() * PIECES.length)]}${ENDINGS[Math.floor(random() * ENDINGS.length)]}`, "utf8");
    parts.push(piece);
    length += piece.length;
  }
  const text = Buffer.concat(parts);
  // Cut at a character boundary, then pad with spaces: the file ends in trailing whitespace.
  let end = Math.max(0, bytes - 3);
  while (end > 0 && ((text[end] as number) & 0xc0) === 0x80) end -= 1;
  return Buffer.concat([text.subarray(0, end), Buffer.from(" \t ".repeat(bytes), "utf8").subarray(0, bytes - end)]);
}

export interface ByteExactOutcome {
  name: string;
  held: boolean;
  /** What the CLI said (exit code and status) and what `cmp` found. */
  detail: string;
  ms: number;
}

/**
 * Runs one case through the CLI in its own folders and checks the file it leaves with `cmp`:
 * text and binary alike must be copied exactly and the run `completed` (exit 0) — a binary file
 * read and saved travels as base64 with its encoding, and is written back as its bytes.
 */
export async function runByteExactCase(entry: ByteExactCase, cli: string, directory: string): Promise<ByteExactOutcome> {
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace, { recursive: true });
  writeFileSync(path.join(workspace, "source.dat"), byteExactContent(entry.bytes, entry.binary));
  const task = entry.task === "copy" ? "copy source.dat to copy.dat" : "read source.dat and save it to copy.dat";
  const started = performance.now();
  let code = 0;
  let stdout: string;
  try {
    ({ stdout } = await run(process.execPath, [cli, "run", task, "--json", "--workspace", workspace, "--data-dir", path.join(directory, "data")], {
      cwd: directory,
      env: { ...process.env, TROUPE_PROVIDER: "offline" },
      maxBuffer: 256 * 1024 * 1024,
    }));
  } catch (error) {
    const failed = error as { code?: number; stdout?: string };
    code = typeof failed.code === "number" ? failed.code : -1;
    stdout = failed.stdout ?? "";
  }
  const ms = performance.now() - started;
  let status = "?";
  let failure = "";
  try {
    const result = JSON.parse(stdout) as { status: string; trace?: { unfinished?: Array<{ error?: string }> } };
    status = result.status;
    failure = result.trace?.unfinished?.[0]?.error ?? "";
  } catch {
    // no JSON: the detail says so below
  }
  const copy = path.join(workspace, "copy.dat");
  let same = false;
  let compared = "no copy";
  if (existsSync(copy)) {
    try {
      await run("cmp", [path.join(workspace, "source.dat"), copy]);
      same = true;
      compared = "cmp: identical";
    } catch (error) {
      compared = `cmp: ${((error as { stdout?: string }).stdout ?? "differ").trim()}`;
    }
  }
  return { name: entry.name, held: code === 0 && status === "completed" && same, detail: `exit ${code}, ${status}; ${compared}${failure ? `; ${failure}` : ""}`, ms };
}

export interface ByteExactReport {
  cases: ByteExactOutcome[];
  held: number;
  total: number;
  target: { rate: number; met: boolean };
}

/** The whole matrix, one CLI run per case in its own temporary folders, one at a time. */
export async function measureByteExact(cli: string, makeDirectory: <T>(body: (directory: string) => Promise<T>) => Promise<T>): Promise<ByteExactReport> {
  const cases: ByteExactOutcome[] = [];
  for (const entry of byteExactCases()) cases.push(await makeDirectory((directory) => runByteExactCase(entry, cli, directory)));
  const held = cases.filter((outcome) => outcome.held).length;
  return { cases, held, total: cases.length, target: { rate: 1, met: held === cases.length } };
}
