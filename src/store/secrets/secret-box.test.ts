import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { KEY_FILE, openSecretBox } from "./secret-box.js";

const made: string[] = [];
afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});
function directory(): string {
  const made_ = mkdtempSync(path.join(tmpdir(), "troupe-secret-"));
  made.push(made_);
  return made_;
}

describe("troupe's secret box", () => {
  it("makes a key file the owner alone can read, and seals so that only the same key and context open", () => {
    const data = directory();
    const box = openSecretBox({ directory: data });
    expect(statSync(path.join(data, KEY_FILE)).mode & 0o777).toBe(0o600);
    const sealed = box.seal("the access token", "server a\0tokens");
    expect(sealed).toMatch(new RegExp(`^v1:${box.keyId}:`));
    expect(sealed).not.toContain("access");
    expect(box.seal("the access token", "server a\0tokens")).not.toBe(sealed);
    expect(box.open(sealed, "server a\0tokens")).toBe("the access token");
    // The same key file opens it in another process; another context (a row moved) or a changed byte does not.
    expect(openSecretBox({ directory: data }).open(sealed, "server a\0tokens")).toBe("the access token");
    expect(() => box.open(sealed, "server b\0tokens")).toThrow("it was changed, or belongs to another server or kind");
    const parts = sealed.split(":");
    parts[3] = `${parts[3]?.slice(0, -2)}AA`;
    expect(() => box.open(parts.join(":"), "server a\0tokens")).toThrow("it was changed");
    const other = openSecretBox({ directory: directory(), key: Buffer.alloc(32, 1).toString("base64") });
    expect(() => other.open(sealed, "server a\0tokens")).toThrow(`sealed with key ${box.keyId}, and this process has key ${other.keyId}`);
  });

  it("takes TROUPE_SECRET_KEY as base64 or hex, and refuses any other", () => {
    const hex = "ab".repeat(32);
    const fromHex = openSecretBox({ directory: directory(), key: hex });
    const fromBase64 = openSecretBox({ directory: directory(), key: Buffer.from(hex, "hex").toString("base64") });
    expect(fromHex.keyId).toBe(fromBase64.keyId);
    expect(() => openSecretBox({ directory: directory(), key: "short" })).toThrow(expect.objectContaining({ code: "secret_key_invalid" }));
  });

  it("refuses a key file others may read, a symlink in its place, or one that holds no key", () => {
    const loose = directory();
    openSecretBox({ directory: loose });
    chmodSync(path.join(loose, KEY_FILE), 0o644);
    expect(() => openSecretBox({ directory: loose })).toThrow(expect.objectContaining({ code: "secret_key_unsafe", message: expect.stringContaining("chmod 600") }));
    const linked = directory();
    writeFileSync(path.join(linked, "elsewhere"), Buffer.alloc(32, 2).toString("base64"), { mode: 0o600 });
    symlinkSync(path.join(linked, "elsewhere"), path.join(linked, KEY_FILE));
    expect(() => openSecretBox({ directory: linked })).toThrow(expect.objectContaining({ code: "secret_key_unsafe" }));
    const empty = directory();
    writeFileSync(path.join(empty, KEY_FILE), "not a key\n", { mode: 0o600 });
    expect(() => openSecretBox({ directory: empty })).toThrow(expect.objectContaining({ code: "secret_key_invalid" }));
    expect(readFileSync(path.join(empty, KEY_FILE), "utf8")).toBe("not a key\n");
  });
});
