import { createHash, randomUUID } from "node:crypto";
import { type Artifact, type Message, type Part, Role, type Task, type TaskArtifactUpdateEvent, TaskState, type TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { errorMessage } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import type { InterruptInfo } from "../../core/run.js";
import { truncate } from "../../core/text.js";
import type { Troupe } from "../../runtime/engine.js";
import type { RunRecord } from "../../store/index.js";
import { readContainedFile } from "../../tools/workspace-read.js";
import { describeInterrupt } from "../interrupt-prompt.js";
import { threadNameOfRun } from "../../core/thread-key.js";

/**
 * An A2A task is a troupe run: the task id is the run id, the context id its thread. These turn a
 * run's record and events into A2A's task, status and artifact objects (the SDK's v1.0 types).
 */

/** The largest file sent back as an artifact's bytes; a larger one is described (path, size, SHA-256) instead. */
export const MAX_FILE_ARTIFACT_BYTES = 4 * 1024 * 1024;
/** The most bytes of files one task sends back. */
const MAX_FILE_ARTIFACTS_TOTAL = 16 * 1024 * 1024;

export function textPart(text: string, mediaType = "text/plain"): Part {
  return { content: { $case: "text", value: text }, mediaType, filename: "", metadata: undefined };
}

export function dataPart(value: unknown): Part {
  return { content: { $case: "data", value }, mediaType: "application/json", filename: "", metadata: undefined };
}

export function agentMessage(taskId: string, contextId: string, parts: Part[], messageId: string = randomUUID()): Message {
  return { messageId, contextId, taskId, role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

/** A run's state as A2A's: waiting for a person is input-required; a person's rejection is rejected. */
export function taskStateOf(record: RunRecord, activeHere: boolean): TaskState {
  switch (record.status) {
    case "queued":
      return TaskState.TASK_STATE_SUBMITTED;
    case "running":
      return TaskState.TASK_STATE_WORKING;
    case "interrupted":
      // Suspended by a shutdown (no question): it goes on when a server starts.
      return record.interrupt && !activeHere ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_WORKING;
    case "completed":
      return TaskState.TASK_STATE_COMPLETED;
    case "cancelled":
      return TaskState.TASK_STATE_CANCELED;
    case "failed":
      return record.stopReason === "rejected" ? TaskState.TASK_STATE_REJECTED : TaskState.TASK_STATE_FAILED;
  }
}

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

/** What a waiting run asks, as an agent message: the question in words, and its kind and payload as data (for machine clients). */
export function questionMessage(taskId: string, contextId: string, interrupt: InterruptInfo): Message {
  return agentMessage(taskId, contextId, [textPart(describeInterrupt(interrupt)), dataPart({ kind: interrupt.kind, payload: interrupt.payload })], `${taskId}:question:${interrupt.kind}`);
}

/** The status message of a run: its question, its error, or its answer's first words (one id per state, so a history holds it once). */
export function statusMessageOf(record: RunRecord, state: TaskState): Message | undefined {
  if (state === TaskState.TASK_STATE_INPUT_REQUIRED && record.interrupt) return questionMessage(record.id, threadNameOfRun(record), record.interrupt);
  const id = `${record.id}:status:${state}`;
  if (state === TaskState.TASK_STATE_FAILED || state === TaskState.TASK_STATE_REJECTED) {
    return agentMessage(record.id, threadNameOfRun(record), [textPart(record.error ?? `the run stopped: ${record.stopReason ?? "failed"}`)], id);
  }
  if (state === TaskState.TASK_STATE_CANCELED) return agentMessage(record.id, threadNameOfRun(record), [textPart("the run was cancelled")], id);
  if (state === TaskState.TASK_STATE_COMPLETED && record.answer) return agentMessage(record.id, threadNameOfRun(record), [textPart(truncate(record.answer, 2_000), "text/markdown")], id);
  return undefined;
}

function mediaTypeOf(file: string): string {
  const extension = /\.([A-Za-z0-9]+)$/.exec(file)?.[1]?.toLowerCase() ?? "";
  const known: Record<string, string> = { txt: "text/plain", md: "text/markdown", json: "application/json", csv: "text/csv", html: "text/html", js: "text/javascript", py: "text/x-python", png: "image/png", jpg: "image/jpeg", pdf: "application/pdf" };
  return known[extension] ?? "application/octet-stream";
}

/** The answer as an artifact. */
export function answerArtifact(answer: string): Artifact {
  return { artifactId: "answer", name: "answer", description: "the run's answer", parts: [textPart(answer, "text/markdown")], metadata: undefined, extensions: [] };
}

/**
 * The files a run wrote, each as an artifact holding its bytes: those this process kept when the
 * run wrote them (found by the SHA-256 recorded then), or else read back from the workspace and
 * checked against that SHA-256. A file read back that changed or went since, or one too large to
 * send, is described instead (path, size, SHA-256, why).
 */
export async function fileArtifacts(troupe: Troupe, runId: string): Promise<Artifact[]> {
  const view = await troupe.show(runId);
  const latest = new Map<string, { sha256?: string; bytes?: number; deleted: boolean }>();
  for (const subtask of view.plan) {
    for (const artifact of subtask.artifacts ?? []) {
      latest.set(artifact.path, { ...(artifact.sha256 ? { sha256: artifact.sha256 } : {}), ...(artifact.bytes !== undefined ? { bytes: artifact.bytes } : {}), deleted: artifact.action === "deleted" });
    }
  }
  const artifacts: Artifact[] = [];
  let total = 0;
  for (const [path, written] of latest) {
    if (written.deleted) continue;
    const described = (why: string): Artifact => ({
      artifactId: `file:${path}`,
      name: path,
      description: `a file the run wrote (${why})`,
      parts: [dataPart({ path, bytes: written.bytes ?? null, sha256: written.sha256 ?? null, omitted: why })],
      metadata: { path },
      extensions: [],
    });
    if ((written.bytes ?? 0) > MAX_FILE_ARTIFACT_BYTES || total + (written.bytes ?? 0) > MAX_FILE_ARTIFACTS_TOTAL) {
      artifacts.push(described(`larger than the ${MAX_FILE_ARTIFACT_BYTES} bytes sent back`));
      continue;
    }
    try {
      // The bytes as the run wrote them, kept by their hash when this process ran it; else read back and checked.
      const kept = written.sha256 ? troupe.writtenFiles.get(written.sha256) : undefined;
      const file = kept ? { bytes: Buffer.from(kept), size: kept.byteLength } : await readContainedFile(troupe.workspace, path, MAX_FILE_ARTIFACT_BYTES);
      const sha256 = kept && written.sha256 ? written.sha256 : createHash("sha256").update(file.bytes).digest("hex");
      if (written.sha256 && sha256 !== written.sha256) {
        artifacts.push(described("changed since the run wrote it"));
        continue;
      }
      total += file.size;
      artifacts.push({
        artifactId: `file:${path}`,
        name: path,
        description: "a file the run wrote",
        parts: [{ content: { $case: "raw", value: file.bytes }, mediaType: mediaTypeOf(path), filename: path, metadata: undefined }],
        metadata: { path, bytes: file.size, sha256 },
        extensions: [],
      });
    } catch (error) {
      artifacts.push(described(`it cannot be read now: ${errorMessage(error)}`));
    }
  }
  return artifacts;
}

/** What a run reports of its spending, for a delegating agent's budget. */
export function usageOf(record: RunRecord): Record<string, number> | undefined {
  if (!record.metrics) return undefined;
  const { llmCalls, promptTokens, completionTokens, costUsd } = record.metrics;
  return { llmCalls, promptTokens, completionTokens, costUsd };
}

/** The run as an A2A task; a finished run's answer and files are its artifacts. */
export async function taskOf(troupe: Troupe, record: RunRecord, activeHere: boolean, options: { artifacts?: boolean } = {}): Promise<Task> {
  const state = taskStateOf(record, activeHere);
  const user: Message = { messageId: `${record.id}:task`, contextId: threadNameOfRun(record), taskId: record.id, role: Role.ROLE_USER, parts: [textPart(record.task)], metadata: undefined, extensions: [], referenceTaskIds: [] };
  const message = statusMessageOf(record, state);
  const artifacts: Artifact[] = [];
  if (options.artifacts !== false && (state === TaskState.TASK_STATE_COMPLETED || state === TaskState.TASK_STATE_FAILED)) {
    if (record.answer) artifacts.push(answerArtifact(record.answer));
    artifacts.push(...(await fileArtifacts(troupe, record.id)));
  }
  const usage = usageOf(record);
  return {
    id: record.id,
    contextId: threadNameOfRun(record),
    // When the record last changed: the time ListTasks orders and filters by.
    status: { state, message, timestamp: new Date(record.updatedAt).toISOString() },
    artifacts,
    history: message ? [user, message] : [user],
    metadata: { troupe: { runId: record.id, status: record.status, stopReason: record.stopReason, ...(usage ? { usage } : {}) } },
  };
}

/** A status update of a run's task. */
export function statusUpdate(taskId: string, contextId: string, state: TaskState, message?: Message, metadata?: Record<string, unknown>): TaskStatusUpdateEvent {
  return { taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata };
}

export function artifactUpdate(taskId: string, contextId: string, artifact: Artifact): TaskArtifactUpdateEvent {
  return { taskId, contextId, artifact, append: false, lastChunk: true, metadata: undefined };
}

/**
 * What a run's event says to an A2A client while the run goes: progress as `working` status
 * updates, and each finished subtask as an artifact (its summary). The end — answer, files, final
 * state — is told from the record (`finalEvents`), and a question from the interrupt.
 */
export function progressOf(event: StoredEvent, taskId: string, contextId: string): Array<TaskStatusUpdateEvent | TaskArtifactUpdateEvent> {
  const working = (text: string, metadata?: Record<string, unknown>) => statusUpdate(taskId, contextId, TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, [textPart(text)]), metadata);
  switch (event.type) {
    case "run-start":
      return [working(event.resumed ? "resumed" : "started")];
    case "plan-ready":
      return [working(`plan ready: ${event.subtasks.map((subtask) => `${subtask.id} (${subtask.agent}) ${truncate(subtask.label, 80)}`).join("; ")}`, { plan: event.subtasks.map(({ id, label, agent, dependsOn }) => ({ id, label, agent, dependsOn })) })];
    case "subtask-start":
      return [working(`${event.subtaskId} started: ${truncate(event.label, 160)}`)];
    case "subtask-end": {
      const text = `${event.subtaskId} ${event.status}${event.summary ? `: ${event.summary}` : ""}${event.error ? `: ${event.error}` : ""}`;
      const artifact: Artifact = {
        artifactId: `subtask:${event.subtaskId}`,
        name: `subtask ${event.subtaskId}`,
        description: `the outcome of subtask ${event.subtaskId}`,
        parts: [textPart(truncate(text, 2_000))],
        metadata: { subtaskId: event.subtaskId, status: event.status, durationMs: event.durationMs },
        extensions: [],
      };
      return [artifactUpdate(taskId, contextId, artifact), working(truncate(text, 300))];
    }
    case "critic-verdict":
      return [working(`review ${event.verdict.passed ? "passed" : "not passed"} (confidence ${event.verdict.confidence.toFixed(2)})`)];
    default:
      return [];
  }
}
