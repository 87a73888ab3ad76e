import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from "node:fs";
import path from "node:path";
import { secretKeyBytes } from "../../config/env.js";
import { ConfigError, errorMessage } from "../../core/errors.js";
import type { SecretBox } from "../../core/mcp-credentials.js";

/**
 * troupe's secret box: AES-256-GCM with a 32-byte key, a fresh 12-byte nonce per seal, and the
 * row's context (server and kind) as additional data. The key comes from TROUPE_SECRET_KEY, or
 * from `secret.key` in the data directory, made on first use with mode 0600 and never followed
 * through a symlink. The key stays out of the database, so a copy of the database (a backup, a
 * dump of the Postgres tables) holds no usable token; a process needs the key as well.
 */

export const KEY_FILE = "secret.key";
const VERSION = "v1";
const MAX_KEY_FILE_BYTES = 256;

function keyIdOf(key: Buffer): string {
  return createHash("sha256").update("troupe secret key id\0").update(key).digest("hex").slice(0, 12);
}

/** Reads the key file, refusing a symlink, a FIFO or anything but a regular file only its owner may read. */
function readKeyFile(file: string): Buffer {
  let descriptor: number;
  try {
    descriptor = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw new ConfigError("secret_key_unsafe", `the secret key file ${file} cannot be opened (${errorMessage(error)}): it must be a regular file, not a symlink`, { path: file });
  }
  try {
    const stat = fstatSync(descriptor);
    if (!stat.isFile()) throw new ConfigError("secret_key_unsafe", `the secret key file ${file} is not a regular file`, { path: file });
    if ((stat.mode & 0o077) !== 0) {
      throw new ConfigError("secret_key_unsafe", `the secret key file ${file} may be read by others (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 it`, { path: file });
    }
    const buffer = Buffer.alloc(MAX_KEY_FILE_BYTES);
    const read = readSync(descriptor, buffer, 0, MAX_KEY_FILE_BYTES, 0);
    const key = secretKeyBytes(buffer.subarray(0, read).toString("utf8"));
    if (!key) throw new ConfigError("secret_key_invalid", `the secret key file ${file} does not hold 32 bytes as base64 or hex`, { path: file });
    return key;
  } finally {
    closeSync(descriptor);
  }
}

/** The data directory's key, made now (0600, exclusive: two processes starting at once share one) when there is none. */
function keyFromDirectory(directory: string): Buffer {
  const file = path.join(directory, KEY_FILE);
  let descriptor: number | undefined;
  try {
    descriptor = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw new ConfigError("secret_key_unsafe", `the secret key file ${file} cannot be made: ${errorMessage(error)}`, { path: file });
  }
  if (descriptor !== undefined) {
    const key = randomBytes(32);
    try {
      writeSync(descriptor, `${key.toString("base64")}\n`);
    } finally {
      closeSync(descriptor);
    }
    return key;
  }
  return readKeyFile(file);
}

/** A secret box on the given key, or on the data directory's key file. */
export function openSecretBox(options: { directory: string; key?: string }): SecretBox {
  let key: Buffer;
  if (options.key !== undefined) {
    const given = secretKeyBytes(options.key);
    if (!given) throw new ConfigError("secret_key_invalid", "TROUPE_SECRET_KEY must be 32 bytes as base64 (44 characters) or hex (64 characters)", { variable: "TROUPE_SECRET_KEY" });
    key = given;
  } else key = keyFromDirectory(options.directory);
  const keyId = keyIdOf(key);
  return {
    keyId,
    seal(plaintext, context) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      cipher.setAAD(Buffer.from(context, "utf8"));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [VERSION, keyId, nonce.toString("base64url"), body.toString("base64url"), cipher.getAuthTag().toString("base64url")].join(":");
    },
    open(sealed, context) {
      const [version, sealedWith, nonce, body, tag] = sealed.split(":");
      if (version !== VERSION || !sealedWith || nonce === undefined || body === undefined || tag === undefined) throw new Error("not a sealed secret of this troupe");
      if (sealedWith !== keyId) throw new Error(`sealed with key ${sealedWith}, and this process has key ${keyId}`);
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(nonce, "base64url"));
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      try {
        return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
      } catch {
        throw new Error("it was changed, or belongs to another server or kind");
      }
    },
  };
}
