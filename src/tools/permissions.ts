import { z } from "zod";
import { compileLinearRegExp, patternProblem } from "../core/linear-regex.js";
import { levelRank, PERMISSION_LEVELS, type PermissionLevel, RISK_LEVELS, type ToolDefinition } from "./define-tool.js";

/**
 * Per-agent tool permissions. A grant gives an agent a level on a tool (or a pattern of tools),
 * optionally under conditions (argument constraints, a time window) and until an expiry. The
 * policy is default-deny: a call is allowed only when the tool needs no more than the default
 * level (NONE: pure tools such as the calculator) or a live grant covers it. The model never
 * sees this check; it runs in the registry on every call.
 */

export const PermissionLevelName = z.enum(PERMISSION_LEVELS);
export const RiskLevelName = z.enum(RISK_LEVELS);

/** The local person: holds every level and needs no approval. */
export const OPERATOR = "operator";

const clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: "a time is HH:MM (24-hour)" });
const DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;

/** When a grant applies: between `start` and `end` (an overnight window wraps), on the given days. */
export const TimeWindow = z
  .object({
    start: clock,
    end: clock,
    days: z.array(z.enum(DAY_NAMES)).min(1).optional(),
    /** An IANA time zone (default: the machine's). */
    timezone: z
      .string()
      .refine((zone) => {
        try {
          new Intl.DateTimeFormat("en-US", { timeZone: zone });
          return true;
        } catch {
          return false;
        }
      }, { error: "unknown time zone" })
      .optional(),
  })
  .strict();
export type TimeWindow = z.infer<typeof TimeWindow>;

/** A constraint on one argument (a dotted path into the arguments). Every given check must hold. */
export const ArgumentConstraint = z
  .object({
    equals: z.unknown().optional(),
    oneOf: z.array(z.unknown()).min(1).optional(),
    /** A regular expression the (string) value must match, run on RE2 (linear time; no lookaround or backreferences). */
    pattern: z
      .string()
      .superRefine((source, context) => {
        const problem = patternProblem(source, "u");
        if (problem !== undefined) context.addIssue({ code: "custom", message: `invalid regular expression: ${problem}` });
      })
      .optional(),
    /** The (string) value must start with one of these. */
    prefix: z.union([z.string(), z.array(z.string()).min(1)]).optional(),
    min: z.number().optional(),
    max: z.number().optional(),
    maxLength: z.number().int().nonnegative().optional(),
  })
  .strict();
export type ArgumentConstraint = z.infer<typeof ArgumentConstraint>;

export const GrantConditions = z
  .object({
    args: z.record(z.string(), ArgumentConstraint).optional(),
    timeWindow: TimeWindow.optional(),
  })
  .strict();
export type GrantConditions = z.infer<typeof GrantConditions>;

const expiry = z
  .union([z.iso.datetime({ offset: true }), z.number().int().positive()])
  .transform((value) => (typeof value === "number" ? value : Date.parse(value)));

/** A grant as written in configuration or given at run time. */
export const Grant = z
  .object({
    agent: z.string().min(1).max(64),
    /** A tool name or a pattern with `*` (`file_*`, `docs.*`, `*`). */
    tool: z.string().min(1).max(128),
    level: PermissionLevelName,
    conditions: GrantConditions.optional(),
    expiresAt: expiry.optional(),
    grantedBy: z.string().min(1).max(128).default("config"),
  })
  .strict();
export type Grant = z.infer<typeof Grant>;
export type GrantInput = z.input<typeof Grant>;

/**
 * Grants added and revoked while troupe runs (`troupe grants`, `/api/v1/grants`), kept in the
 * store so every process sees them. Revoked grants stay listed: a call they would have allowed
 * is denied naming the revocation.
 */
export interface RuntimeGrant {
  id: string;
  grant: Grant;
  createdAt: number;
  reason: string | null;
  revokedAt: number | null;
  revokedBy: string | null;
  revokeReason: string | null;
}

/** Where the registry reads the runtime grants in force when a call starts. */
export interface RuntimeGrantSource {
  /** The grants now, revoked ones included; cheap when nothing changed since the last read. */
  current(): Promise<readonly RuntimeGrant[]>;
}

/** How a grant is named in a denial: its id when it was given at runtime, else its tool, level and who granted it. */
export function describeGrant(grant: Grant, runtime?: RuntimeGrant): string {
  const what = `${grant.tool}, ${grant.level}, granted by ${grant.grantedBy}`;
  return runtime ? `grant ${runtime.id} (${what})` : `grant (${what})`;
}

/** Which calls wait for a person. */
export const ApprovalRules = z
  .object({
    /** Tool names or patterns that always need approval. */
    tools: z.array(z.string().min(1)).default([]),
    /** Risk levels that need approval. */
    riskLevels: z.array(RiskLevelName).default(["high"]),
  })
  .strict();
export type ApprovalRules = z.infer<typeof ApprovalRules>;

export type PermissionDecision =
  | { allowed: true; level: PermissionLevel; grant?: Grant; needsApproval: boolean; reason: string }
  | { allowed: false; level: PermissionLevel; code: "permission_denied" | "grant_expired" | "grant_revoked" | "condition_failed" | "no_agent"; reason: string };

/** Whether a tool name matches a pattern where `*` stands for any run of characters. */
export function matchesPattern(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  // Greedy matching with one backtrack point (the last '*'): linear in practice, never exponential
  // the way `^.*a.*a.*…$` is on a backtracking engine.
  let at = 0;
  let from = 0;
  let star = -1;
  let resume = 0;
  while (at < name.length) {
    if (from < pattern.length && pattern[from] !== "*" && pattern[from] === name[at]) {
      at += 1;
      from += 1;
    } else if (from < pattern.length && pattern[from] === "*") {
      star = from;
      resume = at;
      from += 1;
    } else if (star >= 0) {
      from = star + 1;
      resume += 1;
      at = resume;
    } else return false;
  }
  while (from < pattern.length && pattern[from] === "*") from += 1;
  return from === pattern.length;
}

function valueAt(args: unknown, path: string): unknown {
  let current: unknown = args;
  for (const key of path.split(".")) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Why an argument breaks its constraint, or undefined when it holds. */
function argumentProblem(name: string, value: unknown, constraint: ArgumentConstraint): string | undefined {
  if (constraint.equals !== undefined && !sameValue(value, constraint.equals)) return `${name} must be ${JSON.stringify(constraint.equals)}`;
  if (constraint.oneOf && !constraint.oneOf.some((option) => sameValue(option, value))) return `${name} must be one of ${JSON.stringify(constraint.oneOf)}`;
  if (constraint.pattern !== undefined && (typeof value !== "string" || !compileLinearRegExp(constraint.pattern, "u").test(value))) {
    return `${name} must match /${constraint.pattern}/`;
  }
  if (constraint.prefix !== undefined) {
    const prefixes = Array.isArray(constraint.prefix) ? constraint.prefix : [constraint.prefix];
    if (typeof value !== "string" || !prefixes.some((prefix) => value.startsWith(prefix))) return `${name} must start with ${prefixes.join(" or ")}`;
  }
  if (constraint.min !== undefined && !(typeof value === "number" && value >= constraint.min)) return `${name} must be at least ${constraint.min}`;
  if (constraint.max !== undefined && !(typeof value === "number" && value <= constraint.max)) return `${name} must be at most ${constraint.max}`;
  if (constraint.maxLength !== undefined) {
    const length = typeof value === "string" || Array.isArray(value) ? value.length : JSON.stringify(value ?? null).length;
    if (length > constraint.maxLength) return `${name} must be at most ${constraint.maxLength} long`;
  }
  return undefined;
}

function minutesOf(text: string): number {
  const [hours, minutes] = text.split(":").map(Number);
  return (hours ?? 0) * 60 + (minutes ?? 0);
}

/** Whether `now` falls in the window (in its time zone). */
export function inTimeWindow(window: TimeWindow, now: Date): boolean {
  const parts = new Intl.DateTimeFormat("en-US", { timeZone: window.timezone, weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).formatToParts(now);
  const part = (type: string): string => parts.find((item) => item.type === type)?.value ?? "";
  const minute = Number(part("hour")) * 60 + Number(part("minute"));
  const day = part("weekday").toLowerCase().slice(0, 3) as (typeof DAY_NAMES)[number];
  const start = minutesOf(window.start);
  const end = minutesOf(window.end);
  const inside = start <= end ? minute >= start && minute < end : minute >= start || minute < end;
  if (!inside) return false;
  if (!window.days) return true;
  // An overnight window's early hours belong to the day it started.
  const startedOn = start > end && minute < end ? DAY_NAMES[(DAY_NAMES.indexOf(day) + 6) % 7] : day;
  return window.days.includes(startedOn as (typeof DAY_NAMES)[number]);
}

/** Why a grant's conditions do not hold for this call, or undefined when they do. */
export function conditionProblem(conditions: GrantConditions | undefined, args: unknown, now: Date): string | undefined {
  if (!conditions) return undefined;
  if (conditions.timeWindow && !inTimeWindow(conditions.timeWindow, now)) {
    const { start, end, days, timezone } = conditions.timeWindow;
    return `outside the permitted hours ${start}-${end}${days ? ` on ${days.join(",")}` : ""}${timezone ? ` (${timezone})` : ""}`;
  }
  for (const [name, constraint] of Object.entries(conditions.args ?? {})) {
    const problem = argumentProblem(name, valueAt(args, name), constraint);
    if (problem) return problem;
  }
  return undefined;
}

export interface PermissionPolicyOptions {
  grants?: readonly Grant[];
  /** The level every agent holds without a grant (default NONE). */
  defaultLevel?: PermissionLevel;
  approval?: Partial<ApprovalRules>;
}

/** The grants in force and the approval rules; answers "may this agent make this call?". */
export class PermissionPolicy {
  readonly #grants: Grant[] = [];
  /** Grants given at runtime (the store's), in force and revoked, by the grant they carry. */
  #runtime = new Map<Grant, RuntimeGrant>();
  #runtimeLive: Grant[] = [];
  readonly defaultLevel: PermissionLevel;
  readonly approval: ApprovalRules;

  constructor(options: PermissionPolicyOptions = {}) {
    this.defaultLevel = options.defaultLevel ?? "NONE";
    this.approval = { tools: options.approval?.tools ?? [], riskLevels: options.approval?.riskLevels ?? ["high"] };
    for (const grant of options.grants ?? []) this.#grants.push(grant);
  }

  /** Adds a grant (validated); returns it as stored. */
  grant(input: GrantInput): Grant {
    const grant = Grant.parse(input);
    this.#grants.push(grant);
    return grant;
  }

  /** Removes an agent's grants on a tool pattern; returns how many were removed. */
  revoke(agent: string, tool: string): number {
    let removed = 0;
    for (let index = this.#grants.length - 1; index >= 0; index -= 1) {
      const grant = this.#grants[index];
      if (grant && grant.agent === agent && grant.tool === tool) {
        this.#grants.splice(index, 1);
        removed += 1;
      }
    }
    return removed;
  }

  grants(agent?: string): Grant[] {
    return [...this.#grants, ...this.#runtimeLive].filter((grant) => agent === undefined || grant.agent === agent || grant.agent === "*");
  }

  /** The runtime grants in force from now on (the registry sets them before each call's check). */
  setRuntime(grants: readonly RuntimeGrant[]): void {
    this.#runtime = new Map(grants.map((runtime) => [runtime.grant, runtime]));
    this.#runtimeLive = grants.filter((runtime) => runtime.revokedAt === null).map((runtime) => runtime.grant);
  }

  /**
   * Why a grant that would have covered this call does not: it expired, or it was revoked — the
   * one most recently ended, named, so the caller knows what changed (not "holds READ").
   */
  #ended(agent: string, tool: Pick<ToolDefinition, "name">, level: PermissionLevel, now: Date): PermissionDecision | undefined {
    const covering = (grant: Grant): boolean => (grant.agent === agent || grant.agent === "*") && matchesPattern(grant.tool, tool.name) && levelRank(grant.level) >= levelRank(level);
    const ended: Array<{ at: number; decision: PermissionDecision }> = [];
    for (const grant of [...this.#grants, ...this.#runtime.keys()]) {
      if (!covering(grant)) continue;
      const runtime = this.#runtime.get(grant);
      if (runtime?.revokedAt != null) {
        const why = runtime.revokeReason ? `: ${runtime.revokeReason}` : "";
        ended.push({
          at: runtime.revokedAt,
          decision: { allowed: false, level, code: "grant_revoked", reason: `${agent}'s ${describeGrant(grant, runtime)} was revoked by ${runtime.revokedBy ?? "someone"} at ${new Date(runtime.revokedAt).toISOString()}${why}` },
        });
      } else if (grant.expiresAt !== undefined && grant.expiresAt <= now.getTime()) {
        ended.push({
          at: grant.expiresAt,
          decision: { allowed: false, level, code: "grant_expired", reason: `${agent}'s ${describeGrant(grant, runtime)} expired at ${new Date(grant.expiresAt).toISOString()}` },
        });
      }
    }
    return ended.sort((a, b) => b.at - a.at)[0]?.decision;
  }

  /** Whether a call to this tool waits for a person (the operator never does). */
  needsApproval(tool: Pick<ToolDefinition, "name" | "riskLevel">, agent: string): boolean {
    if (agent === OPERATOR) return false;
    return this.approval.riskLevels.includes(tool.riskLevel) || this.approval.tools.some((pattern) => matchesPattern(pattern, tool.name));
  }

  /** The decision for one call. `level` is what this call needs (the tool's, or its `levelFor`). */
  check(agent: string | undefined, tool: Pick<ToolDefinition, "name" | "riskLevel">, level: PermissionLevel, args: unknown, now = new Date()): PermissionDecision {
    if (agent === undefined || agent === "") {
      return { allowed: false, level, code: "no_agent", reason: `a call to ${tool.name} must name who makes it` };
    }
    const needsApproval = this.needsApproval(tool, agent);
    if (agent === OPERATOR) return { allowed: true, level, needsApproval: false, reason: "the local operator holds every level" };
    if (levelRank(level) <= levelRank(this.defaultLevel)) {
      return { allowed: true, level, needsApproval, reason: `${tool.name} needs ${level}, which every agent holds` };
    }
    const matching = this.grants(agent).filter((grant) => matchesPattern(grant.tool, tool.name));
    const live = matching.filter((grant) => grant.expiresAt === undefined || grant.expiresAt > now.getTime());
    const strong = live.filter((grant) => levelRank(grant.level) >= levelRank(level));
    if (strong.length === 0) {
      // A grant that would have covered the call and has ended is what the caller needs to hear about.
      const ended = this.#ended(agent, tool, level, now);
      if (ended) return ended;
      if (live.length === 0) return { allowed: false, level, code: "permission_denied", reason: `${agent} has no grant for ${tool.name} (it needs ${level})` };
      const best = live.map((grant) => grant.level).sort((a, b) => levelRank(b) - levelRank(a))[0];
      return { allowed: false, level, code: "permission_denied", reason: `${agent} holds ${best} on ${tool.name}, which needs ${level}` };
    }
    let problem = "";
    for (const grant of strong) {
      const reason = conditionProblem(grant.conditions, args, now);
      if (reason === undefined) {
        const runtime = this.#runtime.get(grant);
        return { allowed: true, level, grant, needsApproval, reason: `granted ${grant.level} on ${grant.tool} by ${grant.grantedBy}${runtime ? ` (grant ${runtime.id})` : ""}` };
      }
      problem ||= reason;
    }
    return { allowed: false, level, code: "condition_failed", reason: `${agent}'s grant for ${tool.name} does not cover this call: ${problem}` };
  }

  /**
   * The tools an agent can reach at all (a live grant of the needed level, or the default level),
   * ignoring argument and time conditions, which only a call can answer. Models are offered these.
   */
  reachable(agent: string, tools: readonly Pick<ToolDefinition, "name" | "permission" | "riskLevel">[], now = new Date()): string[] {
    if (agent === OPERATOR) return tools.map((tool) => tool.name);
    const held = this.grants(agent);
    return tools
      .filter((tool) => {
        if (levelRank(tool.permission) <= levelRank(this.defaultLevel)) return true;
        return held.some(
          (grant) =>
            matchesPattern(grant.tool, tool.name) &&
            levelRank(grant.level) >= levelRank(tool.permission) &&
            (grant.expiresAt === undefined || grant.expiresAt > now.getTime()),
        );
      })
      .map((tool) => tool.name);
  }
}
