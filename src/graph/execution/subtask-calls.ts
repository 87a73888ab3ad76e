import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { AgentToolCall } from "../../agents/agent-loop.js";
import { BoardMessage } from "../../core/board.js";
import { LIMITS } from "../../core/limits.js";
import type { PlannedSubtask } from "../../core/plan.js";
import type { ToolCallRecord } from "../../core/run.js";
import type { LiveBoard } from "../board.js";
import { emit } from "../deps.js";
import { traceRecord } from "./subtask-attempt.js";

/**
 * The calls of one subtask as they finish: into the trace (a map keeps a bounded sample, the
 * first ones and failures; all are counted), a `tool-call` event (not for a map's items, nor a
 * call replayed after a pause), and the board (a `board_post` it made).
 */
export class SubtaskCalls {
  readonly records: ToolCallRecord[] = [];
  /** What it posted (its calls' values, replayed ones too): part of its update, so the state and the checkpoint keep them. */
  readonly posts: BoardMessage[] = [];
  count = 0;
  #tracedFailures = 0;

  constructor(
    private readonly subtask: PlannedSubtask,
    private readonly board: LiveBoard,
    private readonly config: LangGraphRunnableConfig,
  ) {}

  note(call: AgentToolCall, replayed: boolean): void {
    const { subtask } = this;
    const mapped = subtask.mapOver !== undefined;
    this.count += 1;
    const record = traceRecord(subtask, call, Date.now());
    const keep = !mapped || this.records.length < LIMITS.mapTracedCalls || (!call.outcome.ok && this.#tracedFailures < LIMITS.mapTracedCalls);
    if (keep) {
      this.records.push(record);
      if (mapped && !call.outcome.ok) this.#tracedFailures += 1;
    }
    if (!mapped && !replayed) {
      emit(this.config, {
        type: "tool-call",
        subtaskId: subtask.id,
        agent: subtask.agent,
        tool: call.tool,
        ok: call.outcome.ok,
        durationMs: record.durationMs,
        preview: record.preview,
        ...(record.notes ? { notes: record.notes } : {}),
        ...(record.untrusted ? { untrusted: record.untrusted } : {}),
      });
    }
    if (call.tool === "board_post" && call.outcome.ok) {
      const posted = BoardMessage.safeParse(call.outcome.value);
      if (posted.success && !this.posts.some((message) => message.id === posted.data.id)) {
        this.posts.push(posted.data);
        this.board.absorb([posted.data]);
      }
    }
  }
}
