// The JavaScript sandbox's worker thread: runs one script in QuickJS (WebAssembly) and posts the
// outcome. Node runs this file directly (type stripping), so it uses erasable syntax only and
// imports npm packages only. The script sees `input` and `console`, nothing of the host.
//
// Nothing of unbounded size is copied out of QuickJS: the result is serialized inside the VM and
// only its first `maxResultBytes` come out, console lines are cut inside the VM, and so are error
// messages. A script that builds a 100 MiB string therefore costs the VM's memory (capped) and
// never this thread's heap — a copy that large would hit the thread's `resourceLimits` at once,
// and V8 aborts the whole process when one allocation overshoots a worker's heap limit.
import { parentPort, workerData } from "node:worker_threads";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSHandle, RELEASE_SYNC } from "quickjs-emscripten";

interface Job {
  code: string;
  input: unknown;
  memoryBytes: number;
  stackBytes: number;
  timeoutMs: number;
  maxOutputChars: number;
  maxResultBytes: number;
}

const job = workerData as Job;
// QuickJS's own limit does not count every allocation (typed arrays), so the WebAssembly memory
// itself is capped too: past it, malloc fails and QuickJS reports "out of memory".
const PAGE = 64 * 1024;
const maximumPages = Math.ceil((job.memoryBytes + 32 * 1024 * 1024) / PAGE);
// (The WebAssembly global is not in the ES library typings troupe compiles against.)
const { Memory } = (globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number; maximum: number }) => object } }).WebAssembly;
const wasmMemory = new Memory({ initial: Math.min(256, maximumPages), maximum: maximumPages });
const QuickJS = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmMemory: wasmMemory as never }));
const runtime = QuickJS.newRuntime();
runtime.setMemoryLimit(job.memoryBytes);
runtime.setMaxStackSize(job.stackBytes);
const deadline = Date.now() + job.timeoutMs;
let interrupted = false;
runtime.setInterruptHandler(() => {
  if (Date.now() > deadline) interrupted = true;
  return interrupted;
});
const vm = runtime.newContext();
let output = "";
let truncated = false;

// Helpers that run inside the VM, made from the builtins before the script can replace them.
// `text(value, max)`: how console shows a value, at most `max` characters (one more tells it was cut).
// `json(value, max)`: its JSON text ("null" for undefined), cut the same way; throws when it has none.
// `describe(error)`: [name, message], bounded.
const helpers = vm
  .evalCode(
    `(() => {
      const stringify = JSON.stringify, toText = String, slice = Function.prototype.call.bind(String.prototype.slice);
      const safeText = (value) => { try { return toText(value); } catch { return "[unprintable]"; } };
      const text = (value, max) => {
        if (typeof value === "string") return slice(value, 0, max);
        let shown;
        try { shown = stringify(value); } catch { shown = undefined; }
        return slice(shown === undefined ? safeText(value) : shown, 0, max);
      };
      const json = (value, max) => {
        // A long string is cut before it is quoted: serializing it whole could take more memory than the VM has.
        if (typeof value === "string" && value.length > max) return slice(value, 0, max + 1);
        const shown = stringify(value);
        return slice(shown === undefined ? "null" : shown, 0, max);
      };
      const describe = (error) => {
        if (error !== null && typeof error === "object") {
          let name, message;
          try { name = error.name; message = error.message; } catch {}
          return [slice(safeText(name ?? "Error"), 0, 200), slice(safeText(message ?? ""), 0, 4000)];
        }
        return ["Error", slice(safeText(error), 0, 4000)];
      };
      return [text, json, describe];
    })()`,
    "troupe-helpers.js",
  )
  .unwrap();
const textHelper = vm.getProp(helpers, 0);
const jsonHelper = vm.getProp(helpers, 1);
const describeHelper = vm.getProp(helpers, 2);
helpers.dispose();

/** Calls a helper and copies its (bounded) string out; `{ thrown }` when the helper threw. */
function callHelper(helper: QuickJSHandle, ...args: QuickJSHandle[]): string | { thrown: { name: string; message: string } } {
  const result = vm.callFunction(helper, vm.undefined, ...args);
  if (result.error) {
    const thrown = describeError(result.error);
    result.error.dispose();
    return { thrown };
  }
  const text = vm.getString(result.value);
  result.value.dispose();
  return text;
}

function describeError(handle: QuickJSHandle): { name: string; message: string } {
  const result = vm.callFunction(describeHelper, vm.undefined, handle);
  if (result.error) {
    result.error.dispose();
    return { name: "Error", message: "the script threw something that cannot be described" };
  }
  const part = (index: number): string => {
    const item = vm.getProp(result.value, index);
    const text = vm.getString(item);
    item.dispose();
    return text;
  };
  const described = { name: part(0), message: part(1) };
  result.value.dispose();
  return described;
}

function withNumber<T>(value: number, use: (handle: QuickJSHandle) => T): T {
  const handle = vm.newNumber(value);
  try {
    return use(handle);
  } finally {
    handle.dispose();
  }
}

const consoleObject = vm.newObject();
for (const level of ["log", "info", "warn", "error", "debug"]) {
  const printer = vm.newFunction(level, (...handles: QuickJSHandle[]) => {
    if (truncated) return;
    const room = job.maxOutputChars - output.length;
    const parts: string[] = [];
    let used = 0;
    for (const handle of handles) {
      const shown = withNumber(room - used + 1, (max) => callHelper(textHelper, handle, max));
      const part = typeof shown === "string" ? shown : "[unprintable]";
      parts.push(part);
      used += part.length + 1;
      if (used > room) break;
    }
    const line = `${parts.join(" ")}\n`;
    if (line.length > room) {
      output += line.slice(0, Math.max(0, room));
      truncated = true;
    } else output += line;
  });
  vm.setProp(consoleObject, level, printer);
  printer.dispose();
}
vm.setProp(vm.global, "console", consoleObject);
consoleObject.dispose();

const inputResult = vm.evalCode(`(${JSON.stringify(job.input ?? null)})`, "input.js");
if (inputResult.error) {
  inputResult.error.dispose();
} else {
  vm.setProp(vm.global, "input", inputResult.value);
  inputResult.value.dispose();
}

/** The value's JSON, or why it cannot come back. */
function resultOf(value: QuickJSHandle): Record<string, unknown> {
  // Characters first (at most the byte cap plus one come out), then the exact UTF-8 size.
  const text = withNumber(job.maxResultBytes + 1, (max) => callHelper(jsonHelper, value, max));
  if (typeof text !== "string") {
    if (interrupted) return { ok: false, error: text.thrown, interrupted };
    // Serializing it took more than the VM's memory: larger than any cap.
    if (/out of memory/i.test(text.thrown.message)) return { ok: false, tooLarge: true, error: text.thrown, interrupted };
    return { ok: false, error: { name: text.thrown.name, message: `the script's value cannot be turned into JSON: ${text.thrown.message}` }, interrupted };
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > job.maxResultBytes) return { ok: false, tooLarge: true, error: { name: "RangeError", message: `the script's value is larger than ${job.maxResultBytes} bytes as JSON` }, interrupted };
  return { ok: true, json: text };
}

let message: Record<string, unknown>;
try {
  const result = vm.evalCode(job.code, "main.js");
  if (result.error) {
    message = { ok: false, error: describeError(result.error), interrupted };
    result.error.dispose();
  } else {
    let value: QuickJSHandle = result.value;
    // A script may end in a promise (async code): run its jobs until it settles or time runs out.
    const state = vm.getPromiseState(value);
    if (state.type !== "fulfilled" || state.notAPromise !== true) {
      runtime.executePendingJobs(-1);
      const settled = vm.getPromiseState(value);
      if (settled.type === "fulfilled") {
        if (!settled.notAPromise) {
          value.dispose();
          value = settled.value;
        }
      } else if (settled.type === "rejected") {
        message = { ok: false, error: describeError(settled.error), interrupted };
        settled.error.dispose();
        value.dispose();
        throw new Error("settled");
      } else {
        value.dispose();
        message = { ok: false, error: { name: "Error", message: "the script's promise never settled" }, interrupted };
        throw new Error("settled");
      }
    }
    message = resultOf(value);
    value.dispose();
  }
} catch (error) {
  message ??= { ok: false, error: { name: "InternalError", message: (error as Error).message }, interrupted };
}
parentPort?.postMessage({ ...message, output, truncated, interrupted });
