import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ToolOutcome } from "../define-tool.js";
import { ToolRegistry } from "../registry.js";
import { workspaceRoot } from "../workspace.js";
import { Bubblewrap } from "../sandbox/bubblewrap.js";
import { createCodeRunTool } from "./code-run.js";

let base: string;
let workspace: string;
let outside: string;
let listener: Server;
let connections = 0;
let port = 0;
const TIMEOUT_MS = 3_000;
const registry = new ToolRegistry().register(createCodeRunTool({ timeoutMs: TIMEOUT_MS, memoryMb: 128, maxProcesses: 32 }) as never);
const run = (language: string, code: string, input?: unknown): Promise<ToolOutcome> => registry.call("code_run", { language, code, input }, { workspace });

/** The processes running as the sandbox's user (nobody): none may survive a run. */
function sandboxProcesses(): number {
  let count = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      if (/^Uid:\s+65534\b/m.test(status)) count += 1;
    } catch {
      // the process ended while we looked
    }
  }
  return count;
}

/** The host afterwards: the outside untouched, no connection made, and (as root) every sandbox process gone — the kernel reaps a killed namespace within moments. */
async function expectHealthy(): Promise<void> {
  expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("outside");
  expect(readdirSync(outside)).toEqual(["secret.txt"]);
  expect(connections).toBe(0);
  if (process.getuid?.() !== 0) return;
  for (let wait = 0; wait < 50 && sandboxProcesses() > 0; wait += 1) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(sandboxProcesses()).toBe(0);
}

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "troupe-sandbox-"));
  outside = path.join(base, "outside");
  mkdirSync(outside);
  writeFileSync(path.join(outside, "secret.txt"), "outside");
  // A host service the sandbox must not reach.
  listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as { port: number }).port;
  process.env.TROUPE_SANDBOX_TEST_SECRET = "do-not-leak-7f3a";
});

afterAll(async () => {
  listener.close();
  delete process.env.TROUPE_SANDBOX_TEST_SECRET;
  await rm(base, { recursive: true, force: true });
});

beforeEach(async () => {
  const directory = path.join(base, `ws-${Math.random().toString(36).slice(2)}`);
  mkdirSync(directory);
  workspace = await workspaceRoot(directory);
});

describe("code_run: JavaScript in QuickJS", () => {
  it("runs code with its input and console, returning the last value", async () => {
    const outcome = await run("javascript", "console.log('sum of', input.values); input.values.reduce((a, b) => a + b, 0)", { values: [1, 2, 3] });
    expect(outcome).toMatchObject({ ok: true, value: { result: 6, stdout: "sum of [1,2,3]\n", exitCode: 0 } });
    expect(await run("javascript", "(async () => { await null; return 'later' })()")).toMatchObject({ ok: true, value: { result: "later" } });
  });

  it.each([
    ["the constructor chain", "this.constructor.constructor('return process')()"],
    ["a function's constructor", "(function(){}).constructor('return require')()('fs')"],
    ["the prototype of an object", "Object.getPrototypeOf({}).constructor.constructor('return globalThis.process.env')()"],
    ["an error's stack frames", "Error.prepareStackTrace = (e, frames) => frames[0].getThis(); new Error().stack.process"],
    ["host globals", "[typeof process, typeof require, typeof fetch, typeof setTimeout, typeof WebAssembly].join()"],
  ])("gives no way to the host through %s", async (_name, code) => {
    const outcome = await run("javascript", code);
    if (outcome.ok) expect(String((outcome.value as { result: unknown }).result)).not.toMatch(/object|function/);
    else expect(outcome.error.code).toBe("code_error");
    expect(JSON.stringify(outcome)).not.toContain("do-not-leak-7f3a");
  });

  it("stops an infinite loop near its time limit, a memory bomb and a stack overflow", async () => {
    const started = performance.now();
    expect(await run("javascript", "for (;;) {}")).toMatchObject({ ok: false, error: { code: "timeout" } });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 5_000);
    // A small heap and a long clock, so the memory limit is what stops it.
    const small = new ToolRegistry().register(createCodeRunTool({ timeoutMs: 30_000, memoryMb: 16 }) as never);
    const rss = process.memoryUsage().rss;
    expect(await small.call("code_run", { language: "javascript", code: "const chunks = []; for (;;) chunks.push(new Uint8Array(1e5))" }, { workspace })).toMatchObject({
      ok: false,
      error: { code: "memory_limit", message: "InternalError: out of memory" },
    });
    expect(process.memoryUsage().rss - rss).toBeLessThan(256 * 1024 * 1024);
    expect(await run("javascript", "let s = 'x'; for (;;) s += s;")).toMatchObject({ ok: false, error: { message: "InternalError: string too long" } });
    expect(await run("javascript", "function f() { return f() + 1 } f()")).toMatchObject({ ok: false, error: { code: "stack_limit" } });
    // The host is fine: a normal run right after works.
    expect(await run("javascript", "1 + 1")).toMatchObject({ ok: true, value: { result: 2 } });
  });
});

describe("code_run: results are bounded inside the sandbox", () => {
  it("refuses a 100 MiB value with result_too_large naming the cap, and the host goes on", async () => {
    const heap = process.memoryUsage().heapUsed;
    const outcome = await run("javascript", '"z".repeat(100 * 1024 * 1024)');
    expect(outcome).toMatchObject({ ok: false, error: { code: "result_too_large" } });
    expect(!outcome.ok && outcome.error.message).toContain("8388608-byte cap on results (tools.sandbox.maxResultBytes)");
    // The value never came to this thread's heap: 100 MiB of it would show.
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(32 * 1024 * 1024);
    const small = new ToolRegistry().register(createCodeRunTool({ maxResultBytes: 1_000 }) as never);
    const capped = await small.call("code_run", { language: "javascript", code: "Array.from({ length: 500 }, (_, i) => i)" }, { workspace });
    expect(capped).toMatchObject({ ok: false, error: { code: "result_too_large", message: expect.stringContaining("1000-byte cap") } });
    // Just under the cap comes back whole, multi-byte characters counted as bytes.
    expect(await small.call("code_run", { language: "javascript", code: "'é'.repeat(499)" }, { workspace })).toMatchObject({ ok: true, value: { result: "é".repeat(499) } });
    expect(await small.call("code_run", { language: "javascript", code: "'é'.repeat(500)" }, { workspace })).toMatchObject({ ok: false, error: { code: "result_too_large" } });
    expect(await run("javascript", "1 + 1")).toMatchObject({ ok: true, value: { result: 2 } });
  });

  it("cuts 100 MiB of console output and a 100 MiB error message inside the sandbox", async () => {
    const printed = await run("javascript", 'console.log("y".repeat(100 * 1024 * 1024)); console.log("after"); 7');
    expect(printed).toMatchObject({ ok: true, value: { result: 7, truncated: true } });
    expect(printed.ok && (printed.value as { stdout: string }).stdout).toBe("y".repeat(64 * 1024));
    const thrown = await run("javascript", 'throw new Error("e".repeat(100 * 1024 * 1024))');
    expect(thrown).toMatchObject({ ok: false, error: { code: "code_error" } });
    expect(!thrown.ok && thrown.error.message.length).toBeLessThan(5_000);
    expect(await run("javascript", "let o = {}; o.self = o; o")).toMatchObject({ ok: false, error: { message: "TypeError: the script's value cannot be turned into JSON: circular reference" } });
    expect(await run("javascript", "'a' + 1n")).toMatchObject({ ok: true, value: { result: "a1" } });
  });

  it("keeps at most maxOutputBytes of a script's stdout while it streams", async () => {
    const outcome = await run("python", "import sys\nfor _ in range(3000):\n    sys.stdout.write('x' * 65536)\nprint('done', file=sys.stderr)");
    expect(outcome).toMatchObject({ ok: true, value: { truncated: true, stderr: "done\n" } });
    expect(outcome.ok && Buffer.byteLength((outcome.value as { stdout: string }).stdout)).toBe(64 * 1024);
  });
});

describe("code_run: scripts under bubblewrap", () => {
  // Never skipped: where the sandbox cannot run, every test here fails with how to install it.
  beforeAll(async () => {
    const problem = await new Bubblewrap().unavailable();
    if (problem) throw new Error(`${problem} (npm test runs .ci/system-packages.sh, which installs it as root or with sudo)`);
  });

  it("runs python and node with the workspace writable at /workspace and input on stdin", async () => {
    const python = await run("python", "import json, sys\nd = json.load(sys.stdin)\nopen('/workspace/out.txt', 'w').write(str(d['n'] * 2))\nprint('ok', d['n'])", { n: 21 });
    expect(python).toMatchObject({ ok: true, value: { language: "python", stdout: "ok 21\n", exitCode: 0 } });
    expect(readFileSync(path.join(workspace, "out.txt"), "utf8")).toBe("42");
    const node = await run("node", "const fs = require('node:fs'); console.log(fs.readFileSync('/workspace/out.txt', 'utf8'))".replace("require('node:fs')", "await import('node:fs')"));
    expect(node).toMatchObject({ ok: true, value: { stdout: "42\n" } });
    const failed = await run("python", "raise ValueError('bad input')");
    expect(failed).toMatchObject({ ok: false, error: { code: "code_error" } });
    expect(!failed.ok && failed.error.message).toContain("ValueError: bad input");
  });

  it("runs an interpreter that is installed under /tmp (the sandbox's /tmp is private)", async () => {
    const binary = path.join(base, "node-install", "bin", "node");
    mkdirSync(path.dirname(binary), { recursive: true });
    try {
      linkSync(process.execPath, binary);
    } catch {
      copyFileSync(process.execPath, binary);
    }
    const local = new ToolRegistry().register(createCodeRunTool({ nodePath: binary }) as never);
    expect(await local.call("code_run", { language: "node", code: "console.log(typeof process.version)" }, { workspace })).toMatchObject({ ok: true, value: { stdout: "string\n" } });
  });

  it("gives an empty environment: /proc/self/environ holds no host secret", async () => {
    const outcome = await run("python", "print(open('/proc/self/environ').read().replace('\\0', '\\n'))");
    expect(outcome.ok).toBe(true);
    const printed = (outcome as { value: { stdout: string } }).value.stdout;
    expect(printed).not.toContain("do-not-leak-7f3a");
    expect(printed.trim().split("\n").sort()).toEqual(["HOME=/tmp", "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin", "PWD=/workspace"]);
    const node = await run("node", "console.log(JSON.stringify(process.env))");
    expect(JSON.stringify(node)).not.toContain("do-not-leak-7f3a");
    await expectHealthy();
  });

  it("cannot write outside the workspace or change the system", async () => {
    const outcome = await run(
      "python",
      [
        "import os",
        `targets = ['${outside}/new.txt', '${outside}/secret.txt', '/usr/bin/evil', '/etc/passwd', '/workspace/../escape.txt', '/tmp/x']`,
        "for t in targets:",
        "    try:",
        "        open(t, 'w').write('pwned')",
        "        print('wrote', t)",
        "    except Exception as e:",
        "        print('refused', t, type(e).__name__)",
      ].join("\n"),
    );
    expect(outcome.ok).toBe(true);
    const printed = (outcome as { value: { stdout: string } }).value.stdout;
    expect(printed).toContain("refused /usr/bin/evil");
    expect(existsSync(path.join(base, "escape.txt"))).toBe(false);
    expect(readFileSync("/etc/passwd", "utf8")).not.toContain("pwned");
    expect(existsSync("/usr/bin/evil")).toBe(false);
    await expectHealthy();
  });

  it.each([
    ["127.0.0.1 (a host service)", () => `('127.0.0.1', ${port})`],
    ["169.254.169.254 (cloud metadata)", () => "('169.254.169.254', 80)"],
  ])("has no network: connecting to %s fails", async (_name, target) => {
    const outcome = await run("python", `import socket\ntry:\n    socket.create_connection(${target()}, timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('blocked', e.errno)`);
    expect(outcome).toMatchObject({ ok: true, value: { stdout: expect.stringMatching(/^blocked \d+/) } });
    await expectHealthy();
  });

  it("refuses new user namespaces, mounts and ptrace (seccomp), while child processes still run", async () => {
    const hardening = await new Bubblewrap().hardening();
    // bubblewrap 0.8 (Debian 12) has --disable-userns; the filter has a table for x86-64.
    expect(hardening).toEqual({ seccomp: process.arch === "x64", disableUserns: true });
    const script = [
      "import ctypes, errno, subprocess",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "def attempt(name, result):",
      "    print(name, result, errno.errorcode.get(ctypes.get_errno()) if result != 0 else 'ok')",
      "attempt('unshare-user', libc.unshare(0x10000000))",
      "attempt('unshare-mount', libc.unshare(0x00020000))",
      "attempt('mount', libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))",
      "attempt('ptrace', libc.ptrace(16, 1, None, None))",
      "print('child', subprocess.run(['/usr/bin/echo', 'ran'], capture_output=True, text=True).stdout.strip())",
    ].join("\n");
    const outcome = await run("python", script);
    expect(outcome).toMatchObject({ ok: true });
    const printed = (outcome as { value: { stdout: string } }).value.stdout;
    if (process.arch === "x64") {
      expect(printed).toBe("unshare-user -1 EPERM\nunshare-mount -1 EPERM\nmount -1 EPERM\nptrace -1 EPERM\nchild ran\n");
    } else expect(printed).toContain("child ran\n");
  });

  it("kills an infinite loop near its wall-clock limit", async () => {
    const started = performance.now();
    expect(await run("python", "while True: pass")).toMatchObject({ ok: false, error: { code: "timeout" } });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 5_000);
    await expectHealthy();
  });

  it("contains a memory bomb and a fork bomb, leaving no process behind", async () => {
    const memory = await run("python", "a = []\nwhile True:\n    a.append(bytearray(10**7))");
    expect(memory).toMatchObject({ ok: false, error: { code: "code_error" } });
    expect(!memory.ok && memory.error.message).toContain("MemoryError");
    const fork = await run("python", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass");
    expect(fork.ok).toBe(false);
    await expectHealthy();
    const nodeFork = await run("node", "const { spawn } = await import('node:child_process'); for (;;) { try { spawn('/usr/bin/sleep', ['30']) } catch {} }");
    expect(nodeFork.ok).toBe(false);
    await expectHealthy();
    // A file larger than the limit is cut off by the kernel.
    const big = await run("python", "open('/workspace/big.bin', 'wb').write(b'x' * (64 * 1024 * 1024))");
    expect(big.ok).toBe(false);
    expect(await run("python", "print('still fine')")).toMatchObject({ ok: true, value: { stdout: "still fine\n" } });
  });

  it("refuses scripts with install instructions where bubblewrap is missing — never runs them unsandboxed", async () => {
    const missing = new ToolRegistry().register(createCodeRunTool({ bwrapPath: "/nonexistent/bwrap" }) as never);
    const outcome = await missing.call("code_run", { language: "python", code: "open('/workspace/ran.txt', 'w').write('ran')" }, { workspace });
    expect(outcome).toMatchObject({ ok: false, error: { code: "sandbox_unavailable" } });
    expect(!outcome.ok && outcome.error.message).toContain("apt-get install bubblewrap");
    expect(existsSync(path.join(workspace, "ran.txt"))).toBe(false);
    // JavaScript needs no subprocess and still runs.
    expect(await missing.call("code_run", { language: "javascript", code: "2 * 21" }, { workspace })).toMatchObject({ ok: true, value: { result: 42 } });
  });
});
