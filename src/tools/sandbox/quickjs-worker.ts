// The JavaScript sandbox's worker thread: runs one script in QuickJS (WebAssembly) and posts the
// outcome. Node runs this file directly (type stripping), so it uses erasable syntax only and
// imports npm packages only. The script sees `input` and `console`, nothing of the host.
import { parentPort, workerData } from "node:worker_threads";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSHandle, RELEASE_SYNC } from "quickjs-emscripten";

interface Job {
  code: string;
  input: unknown;
  memoryBytes: number;
  stackBytes: number;
  timeoutMs: number;
  maxOutputChars: number;
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

function show(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

const consoleObject = vm.newObject();
for (const level of ["log", "info", "warn", "error", "debug"]) {
  const printer = vm.newFunction(level, (...handles: QuickJSHandle[]) => {
    const line = handles.map((handle) => show(vm.dump(handle))).join(" ");
    if (output.length + line.length + 1 > job.maxOutputChars) {
      output += `${line}\n`.slice(0, Math.max(0, job.maxOutputChars - output.length));
      truncated = true;
    } else output += `${line}\n`;
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

function describeError(handle: QuickJSHandle): { name: string; message: string } {
  const dumped = vm.dump(handle) as unknown;
  if (dumped && typeof dumped === "object") {
    const error = dumped as { name?: unknown; message?: unknown };
    return { name: String(error.name ?? "Error"), message: String(error.message ?? show(dumped)) };
  }
  return { name: "Error", message: show(dumped) };
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
    const dumped = vm.typeof(value) === "undefined" ? null : (vm.dump(value) as unknown);
    value.dispose();
    message = { ok: true, value: JSON.parse(JSON.stringify(dumped ?? null)) as unknown };
  }
} catch (error) {
  message ??= { ok: false, error: { name: "InternalError", message: (error as Error).message }, interrupted };
}
parentPort?.postMessage({ ...message, output, truncated, interrupted });
