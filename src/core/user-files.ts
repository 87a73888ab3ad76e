import { closeSync, constants, fstatSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { mkdir, open, stat } from "node:fs/promises";
import path from "node:path";

/**
 * Files and folders a user names (a suite, a cassette, a keys file, a data directory), opened
 * so that a name which is not what it should be gets an answer instead of a hang: a FIFO blocks
 * a plain read for ever, and Node's recursive mkdir loops for ever on a path under /proc.
 */

const { O_RDONLY, O_NONBLOCK } = constants;

/** The largest file read whole by default. */
const MAX_USER_FILE_BYTES = 64 * 1024 * 1024;

function notRegular(file: string, what: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${file} is ${what}, not a regular file`), { code: what === "a folder" ? "EISDIR" : "ENOTREG", path: file });
}

function kindOf(info: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (info.isDirectory()) return "a folder";
  if (info.isFIFO()) return "a FIFO";
  if (info.isSocket()) return "a socket";
  return "a device";
}

/**
 * Reads a regular file whole as UTF-8: opened without blocking (a FIFO opens at once), checked
 * on its descriptor, read up to `maxBytes`. Anything else is an error whose message names it
 * (`ENOTREG`, `EISDIR`, `EFBIG`, or the system's own code).
 */
export async function readUserFile(file: string, maxBytes = MAX_USER_FILE_BYTES): Promise<string> {
  const handle = await open(file, O_RDONLY | O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw notRegular(file, kindOf(info));
    if (info.size > maxBytes) throw Object.assign(new Error(`${file} is ${info.size} bytes, more than ${maxBytes}`), { code: "EFBIG", path: file });
    const buffer = Buffer.alloc(info.size);
    let read = 0;
    while (read < info.size) {
      const { bytesRead } = await handle.read(buffer, read, info.size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    await handle.close();
  }
}

/** `readUserFile`, synchronously (for what is read once at start: a keys file, a config file). */
export function readUserFileSync(file: string, maxBytes = MAX_USER_FILE_BYTES): string {
  const descriptor = openSync(file, O_RDONLY | O_NONBLOCK);
  try {
    const info = fstatSync(descriptor);
    if (!info.isFile()) throw notRegular(file, kindOf(info));
    if (info.size > maxBytes) throw Object.assign(new Error(`${file} is ${info.size} bytes, more than ${maxBytes}`), { code: "EFBIG", path: file });
    const buffer = Buffer.alloc(info.size);
    let read = 0;
    while (read < info.size) {
      const bytesRead = readSync(descriptor, buffer, read, info.size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(descriptor);
  }
}

/** The folders from the nearest existing ancestor down to `directory`, to be made in that order. */
function missingLevels(directory: string, exists: (candidate: string) => boolean): string[] {
  const levels: string[] = [];
  let current = path.resolve(directory);
  while (!exists(current)) {
    levels.unshift(current);
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return levels;
}

/**
 * Makes a folder and its missing parents, one level at a time: a level the system will not make
 * (under /proc, say, where mkdir answers ENOENT however often it is asked) is an error, never a
 * retry loop as in Node's `{ recursive: true }`.
 */
export function ensureDirectorySync(directory: string): void {
  const exists = (candidate: string): boolean => {
    try {
      statSync(candidate);
      return true;
    } catch {
      return false;
    }
  };
  for (const level of missingLevels(directory, exists)) {
    try {
      mkdirSync(level);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
}

/** `ensureDirectorySync`, without blocking. */
export async function ensureDirectory(directory: string): Promise<void> {
  const levels: string[] = [];
  let current = path.resolve(directory);
  for (;;) {
    const found = await stat(current).then(
      () => true,
      () => false,
    );
    if (found) break;
    levels.unshift(current);
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  for (const level of levels) {
    await mkdir(level).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
  }
}
