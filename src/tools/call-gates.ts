import type { ErrorCode } from "../core/error-codes.js";
import { z } from "zod";
import { approvalCard } from "../core/approval-card.js";
import { errorMessage, isTroupeError } from "../core/errors.js";
import { preview } from "../core/text.js";
import { redact } from "./audit.js";
import { addReason, deny, toolSide, type Trail } from "./call-trail.js";
import { callRisk, levelRank, type ToolContext, type ToolDefinition, type ToolOutcome } from "./define-tool.js";
import type { PermissionPolicy } from "./permissions.js";
import type { Egress } from "./egress.js";
import type { Steering, TrustPolicy } from "./trust-policy.js";

/**
 * The steps a tool call passes before it may run: authorize (the run's allow-list, the
 * permission policy, the caller's own refusal, the arguments), steer (the trust policy), hold
 * (effects wait for a plan that stands) and approve (a person, for a high-risk or steered call).
 * Each step either lets the call on or hands back the outcome that ends it, and notes why in the
 * call's trail for the audit row.
 */

/** What authorizing a call found: its validated arguments, its risk, and whether a person must approve it. */
export interface Authorized {
  args: Record<string, unknown>;
  risk: { level: ToolDefinition["riskLevel"]; why: string };
  needsApproval: boolean;
  idempotent: boolean;
}

/**
 * Authorize: the run's allow-list, then the permission policy with the runtime grants as they
 * stand now (a denied call reads as denied even
 * when it is also refused or its arguments are invalid), then the caller's refusal, then the
 * arguments. The trail learns the call's level and grant.
 */
export async function authorize(
  tool: ToolDefinition,
  args: unknown,
  context: ToolContext,
  trail: Trail,
  options: { policy: PermissionPolicy | undefined; refreshGrants: () => Promise<void>; refusal: { code: ErrorCode; message: string } | undefined },
): Promise<Authorized | { refused: ToolOutcome }> {
  const { policy, refusal } = options;
  const name = tool.name;
  const parsed = tool.schema.safeParse(args ?? {});
  trail.level = parsed.success && tool.levelFor ? tool.levelFor(parsed.data) : tool.permission;
  if (context.allowedTools && !context.allowedTools.includes(name)) {
    return { refused: deny(trail, "not among the tools this run may use", "tool_not_allowed", `${name} is not among the tools this run may use (${context.allowedTools.join(", ") || "none"})`) };
  }
  // Grants added or revoked at runtime apply to the next call the policy checks.
  await options.refreshGrants();
  // The risk of this call: what it can do with these arguments (a script with a read-only workspace is not one that can delete).
  const risk = parsed.success ? callRisk(tool, parsed.data, context) : { level: tool.riskLevel, why: `declared ${tool.riskLevel}-risk` };
  let needsApproval = false;
  if (policy) {
    const decision = policy.check(context.agent ?? "", { name, riskLevel: risk.level }, trail.level, parsed.success ? parsed.data : args);
    trail.reason = decision.reason;
    if (!decision.allowed) return { refused: deny(trail, decision.reason, decision.code, `permission denied: ${decision.reason}`) };
    if (decision.grant) trail.grant = `${decision.grant.agent}:${decision.grant.tool}:${decision.grant.level} by ${decision.grant.grantedBy}`;
    needsApproval = decision.needsApproval;
  }
  if (refusal) {
    trail.reason = refusal.message;
    return { refused: { ok: false, error: refusal } };
  }
  if (!parsed.success) return { refused: { ok: false, error: { code: "invalid_arguments", message: `invalid arguments for ${name}: ${z.prettifyError(parsed.error)}` } } };
  trail.args = parsed.data as Record<string, unknown>;
  return { args: trail.args, risk, needsApproval, idempotent: tool.idempotentFor ? tool.idempotentFor(parsed.data) : tool.idempotent };
}

/** What the trust policy found about a call: untrusted data chose what it acts on, or it would send private data where nobody named. */
export interface TrustFinding {
  steering?: Steering;
  egress?: Egress;
}

/**
 * Steer: whether untrusted data steered this call, and whether it would send private data out
 * where nobody named (src/tools/trust-policy.ts, src/tools/egress.ts). Under `deny` such a call
 * is refused; under `ask` it waits for a person like a high-risk call; under `allow` it runs, and
 * the audit row says why it would have asked.
 */
export function steer(trust: TrustPolicy | undefined, tool: ToolDefinition, args: Record<string, unknown>, context: ToolContext, trail: Trail): { refused: ToolOutcome } | { ask: TrustFinding } | undefined {
  if (!trust) return undefined;
  const steering = trust.steering(tool, args, context.provenance);
  const egress = trust.egress(tool, args, context.provenance);
  if (!steering && !egress) return undefined;
  if (steering) addReason(trail, steering.summary);
  if (egress) addReason(trail, egress.summary);
  if (trust.mode === "allow") return undefined;
  if (trust.mode === "deny") {
    trail.decision = "denied";
    return steering
      ? { refused: { ok: false, error: { code: "steered_call_denied", message: `refused by the trust policy (deny): ${steering.summary}` } } }
      : { refused: { ok: false, error: { code: "egress_denied", message: `refused by the trust policy (deny): ${egress?.summary ?? ""}` } } };
  }
  return { ask: { ...(steering ? { steering } : {}), ...(egress ? { egress } : {}) } };
}

/** What a call would do, in words: the tool's own description of it, or its name and arguments. */
export function actionOf(tool: ToolDefinition, args: Record<string, unknown>): string {
  try {
    const described = tool.describe?.(args);
    if (described) return described;
  } catch {
    // a description that fails says nothing; the arguments do
  }
  return `call ${tool.name} with ${preview(redact(args), 300)}`;
}

/**
 * Hold: a call with an effect (above READ, or not idempotent), or that a person must approve,
 * waits for `context.effectsAllowed`: a subtask of a plan still streaming in does its reading and
 * thinking early, and its writes (and its questions) once the plan is known to stand. Refused,
 * with nothing run and nobody asked, when the plan is dropped.
 */
export async function holdEffect(name: string, context: ToolContext, trail: Trail, idempotent: boolean, needsApproval: boolean): Promise<ToolOutcome | undefined> {
  if (!context.effectsAllowed || (idempotent && levelRank(trail.level) <= levelRank("READ") && !needsApproval)) return undefined;
  try {
    await context.effectsAllowed();
    return undefined;
  } catch (error) {
    trail.decision = "denied";
    trail.reason = `held until the plan was judged whole, and the plan was dropped: ${errorMessage(error)}`;
    return { ok: false, error: { code: "plan_dropped", message: `${name} did not run: the plan it belonged to was dropped (${errorMessage(error)})` } };
  }
}

/**
 * Approve: a person judges a high-risk or steered call, with a preview of what it would do (an
 * edit's diff); a preview that fails refuses the call before anyone is asked. A caller that
 * cannot ask (a map's item, a direct call) gets `approval_required`. The ask itself throws (the
 * graph pausing), so the trail is marked suspended while it lasts.
 */
export async function approve(tool: ToolDefinition, call: Authorized, context: ToolContext, trail: Trail, finding: TrustFinding | undefined): Promise<ToolOutcome | undefined> {
  const { needsApproval, risk, args } = call;
  const name = tool.name;
  const steering = finding?.steering;
  const egress = finding?.egress;
  const trustReasons = [...(steering ? [steering.summary] : []), ...(egress ? [egress.summary] : [])];
  if (!needsApproval && trustReasons.length === 0) return undefined;
  if (!context.requestApproval) {
    const why = needsApproval ? `${name} is high-risk` : steering ? `untrusted data steered this call to ${name} (${trustReasons.join("; ")})` : `${name} would send private data where nobody named (${trustReasons.join("; ")})`;
    const reason = `${name} needs a person's approval and this caller cannot ask for it${trustReasons.length > 0 ? ` (${trustReasons.join("; ")})` : ""}`;
    return deny(trail, reason, "approval_required", `${why} and needs a person's approval, which this caller cannot ask for`);
  }
  let preview: Record<string, unknown> | undefined;
  if (tool.preview) {
    try {
      preview = await tool.preview(args, toolSide(context));
    } catch (error) {
      trail.status = "error";
      return { ok: false, error: isTroupeError(error) ? { code: error.code, message: error.message } : { code: "tool_failed", message: errorMessage(error) } };
    }
  }
  trail.suspended = true;
  const reasons = [...(needsApproval ? [`${name} is ${risk.level}-risk (it ${risk.why}) and needs approval before it runs`] : []), ...trustReasons];
  const action = actionOf(tool, args);
  const card = approvalCard({ tool: name, action, ...(steering ? { steering } : {}), ...(egress ? { egress } : {}) });
  const answer = await context.requestApproval({
    ...(preview ? { preview } : {}),
    tool: name,
    agent: context.agent ?? "",
    args: redact(args),
    level: trail.level,
    riskLevel: risk.level,
    reason: reasons.join("; "),
    ...(context.runId !== undefined ? { runId: context.runId } : {}),
    ...(context.subtaskId !== undefined ? { subtaskId: context.subtaskId } : {}),
    ...(steering ? { steering } : {}),
    ...(egress ? { egress } : {}),
    action,
    card,
  });
  trail.suspended = false;
  if (!answer.approved) {
    trail.decision = "rejected";
    trail.reason = answer.feedback ? `rejected by a person: ${answer.feedback}` : "rejected by a person";
    return { ok: false, error: { code: "rejected", message: `a person rejected this call to ${name}${answer.feedback ? `: ${answer.feedback}` : ""}` } };
  }
  trail.decision = "approved";
  return undefined;
}
