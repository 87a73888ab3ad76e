import type { Logger } from "pino";
import type { ResumeDecision } from "../core/run.js";
import type { Troupe } from "../runtime/engine.js";

/** How many waiting runs one look reads at most (oldest first, the rest at the next look). */
const PAGE = 200;

/**
 * The timeout policy for tool servers' questions (MCP elicitation): a question still unanswered
 * past its `expiresAt` (asked at + the server's `elicitation.timeoutMs`) is answered `cancel` on
 * the person's behalf. The run is queued to resume as if a person had answered; the call is made
 * again, the server hears cancel, and the run goes on with whatever the server does with that.
 * Only a run still waiting is changed (compare-and-set on its status), so two servers sweeping
 * one Postgres store answer it once. Resolves with how many were answered.
 */
export async function answerExpiredQuestions(troupe: Troupe, now: number, log?: Logger): Promise<number> {
  let answered = 0;
  const waiting = await troupe.store.runs.list({ status: "interrupted", limit: PAGE });
  for (const record of waiting) {
    if (record.interrupt?.kind !== "mcp-elicitation") continue;
    const pending = await troupe.pendingInterrupts(record.threadId);
    const expired = pending.find((interrupt) => interrupt.kind === "mcp-elicitation" && typeof interrupt.payload.expiresAt === "number" && interrupt.payload.expiresAt <= now);
    if (!expired) continue;
    const decision: ResumeDecision = { decision: "elicitation", action: "cancel", fingerprint: String(expired.payload.fingerprint ?? "") };
    const pendingDecision = expired.id !== undefined ? { ...decision, interruptId: expired.id } : decision;
    const queued = await troupe.store.runs.update(record.id, { status: "queued", pendingDecision, interrupt: null }, { ifStatus: ["interrupted"] });
    if (!queued) continue;
    answered += 1;
    log?.info({ taskId: record.id, server: expired.payload.server, askedAt: expired.payload.askedAt }, "a tool server's question waited past its elicitation.timeoutMs: answered cancel, the run resumes");
  }
  return answered;
}
