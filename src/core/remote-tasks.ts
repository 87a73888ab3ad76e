/**
 * The task a remote A2A agent made for one call of troupe's, kept the moment the agent answers
 * the message: a run that crashed while it waited on the agent finds the task again by the call's
 * id and waits on it, instead of sending the message a second time.
 */
export interface RemoteTaskRecord {
  /** The deterministic id of the call (run, subtask, attempt, step, arguments). */
  callId: string;
  /** The remote agent's name in troupe's config, and its card's URL. */
  agent: string;
  url: string;
  taskId: string;
  contextId: string;
  createdAt: number;
}

export interface RemoteTasks {
  find(callId: string): Promise<RemoteTaskRecord | undefined>;
  /** Keeps the record, committed before this resolves; a second record for the same call keeps the first. */
  save(record: RemoteTaskRecord): Promise<void>;
}
