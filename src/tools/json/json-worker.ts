// The json tool's worker thread: runs one job at a time and posts its outcome. Started by
// json-pool.ts, which terminates it when a job passes its deadline.
import { parentPort } from "node:worker_threads";
import { isTroupeError } from "../../core/errors.js";
import { type JsonJob, runJsonJob } from "./json-operations.js";

parentPort?.on("message", (message: { id: number; job: JsonJob }) => {
  try {
    parentPort?.postMessage({ id: message.id, ok: true, value: runJsonJob(message.job) });
  } catch (error) {
    const code = isTroupeError(error) ? error.code : error instanceof RangeError ? "too_deep" : "json_failed";
    parentPort?.postMessage({ id: message.id, ok: false, error: { code, message: (error as Error).message } });
  }
});
