import { createHash } from "node:crypto";
import { readUserFileSync } from "../core/user-files.js";
import { ConfigError } from "../core/errors.js";
import { LOCAL_OWNER } from "../core/thread-key.js";

/** A caller of the API: who owns the tasks it submits. */
export interface Principal {
  /** Stable id stored with the principal's tasks: the key's name, never the key. */
  id: string;
}

/**
 * The principal of every request when the API is open (loopback without keys). No key may take
 * this name: it would inherit what was made while the API was open.
 */
export const LOCAL_PRINCIPAL: Principal = { id: LOCAL_OWNER };

export interface ApiKey {
  principal: Principal;
  /** sha256 of the key, compared in constant time. */
  digest: Buffer;
}

export function digestOf(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
/** Printable ASCII: what an `Authorization` header carries unchanged. */
const PRINTABLE = /^[\x20-\x7e]+$/;

/** One entry as written, and how to name it in an error without showing any of the key. */
export interface KeyEntry {
  text: string;
  where: string;
}

/** The id an unnamed key of the old format had, so an operator can keep its tasks. */
function oldUnnamedId(text: string): string {
  return `key-${digestOf(text).toString("hex").slice(0, 12)}`;
}

function parseEntry({ text, where }: KeyEntry): { name: string; key: string } {
  const colon = text.indexOf(":");
  if (colon < 0) {
    // Never echo the entry: without a ':' it may be a key and nothing else.
    const old = text.includes("=")
      ? ` The forms "key" and "name=key" are no longer read: a key ending in "=" (base64) read as a name and the key "=".`
      : ` An unnamed key's tasks so far belong to ${oldUnnamedId(text)}: use that as its name to keep them.`;
    throw new ConfigError("invalid_api_keys", `${where}: no name; each entry is name:key (the name before the first ':').${old}`, { where });
  }
  const name = text.slice(0, colon).trim();
  const key = text.slice(colon + 1).trim();
  if (!NAME.test(name)) {
    throw new ConfigError("invalid_api_keys", `${where}: what comes before the first ':' is not a name (1-64 letters, digits, '.', '_' or '-'); each entry is name:key`, { where });
  }
  const named = `${where} (${name})`;
  if (name.toLowerCase() === LOCAL_PRINCIPAL.id) {
    throw new ConfigError("invalid_api_keys", `${named}: the name "${LOCAL_PRINCIPAL.id}" is the open API's caller (loopback without keys) and cannot be a key's; choose another`, { where, name });
  }
  if (key.length === 0) throw new ConfigError("invalid_api_keys", `${named}: no key after the ':'`, { where, name });
  if (!PRINTABLE.test(key)) {
    throw new ConfigError("invalid_api_keys", `${named}: the key holds a character that is not printable ASCII (an Authorization header cannot carry it unchanged)`, { where, name });
  }
  return { name, key };
}

/**
 * Reads key entries, each `name:key`: the name is 1-64 letters, digits, '.', '_' or '-', and
 * the key is everything after the first ':' (any printable ASCII, '=' and ':' included). A
 * malformed entry is named by its position (and its name once that is sure), never shown.
 */
export function parseKeyEntries(entries: KeyEntry[]): ApiKey[] {
  const keys: ApiKey[] = [];
  const names = new Map<string, string>();
  const digests = new Map<string, string>();
  for (const entry of entries) {
    const { name, key } = parseEntry(entry);
    const named = `${entry.where} (${name})`;
    const earlier = names.get(name);
    if (earlier !== undefined) throw new ConfigError("invalid_api_keys", `${named}: the name is already given to ${earlier}`, { where: entry.where, name });
    const digest = digestOf(key);
    const twin = digests.get(digest.toString("hex"));
    if (twin !== undefined) throw new ConfigError("invalid_api_keys", `${named}: the same key as ${twin}; each key names one caller`, { where: entry.where, name });
    names.set(name, entry.where);
    digests.set(digest.toString("hex"), named);
    keys.push({ principal: { id: name }, digest });
  }
  return keys;
}

/** `TROUPE_API_KEYS`: comma-separated `name:key` entries (a key with a ',' goes in a keys file). */
export function keyListEntries(text: string | undefined, source = "TROUPE_API_KEYS"): KeyEntry[] {
  if (!text) return [];
  return text
    .split(",")
    .map((part, index) => ({ text: part.trim(), where: `${source} entry ${index + 1}` }))
    .filter((entry) => entry.text.length > 0);
}

/** Parses `TROUPE_API_KEYS` alone. */
export function parseApiKeys(text: string | undefined): ApiKey[] {
  return parseKeyEntries(keyListEntries(text));
}

/**
 * A keys file (`TROUPE_API_KEYS_FILE`): one `name:key` a line, the key the rest of the line
 * (commas and inner spaces included); blank lines and lines starting with '#' are skipped.
 */
export function keyFileEntries(file: string): KeyEntry[] {
  let text: string;
  try {
    text = readUserFileSync(file, 1024 * 1024);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError("invalid_api_keys", `TROUPE_API_KEYS_FILE: cannot read ${file}: ${code === "ENOTREG" || code === "EISDIR" || code === "EFBIG" ? (error as Error).message : (code ?? (error as Error).message)}`, { file });
  }
  return text
    .split(/\r?\n/)
    .map((line, index) => ({ text: line.trim(), where: `${file} line ${index + 1}` }))
    .filter((entry) => entry.text.length > 0 && !entry.text.startsWith("#"));
}
