import type { RemoteTaskRecord } from "../../core/remote-tasks.js";

export interface RemoteTaskRow {
  call_id: string;
  agent: string;
  url: string;
  task_id: string;
  context_id: string;
  created_at: number;
}

export const rowOf = (record: RemoteTaskRecord): RemoteTaskRow => ({
  call_id: record.callId,
  agent: record.agent,
  url: record.url,
  task_id: record.taskId,
  context_id: record.contextId,
  created_at: record.createdAt,
});

export const recordOf = (row: RemoteTaskRow): RemoteTaskRecord => ({
  callId: row.call_id,
  agent: row.agent,
  url: row.url,
  taskId: row.task_id,
  contextId: row.context_id,
  createdAt: Number(row.created_at),
});
