import { toJSONSchema as zodToJsonSchema, type z } from "zod";
import type { ErrorCode } from "../core/error-codes.js";
import type { BoardMessage, BoardPostArgs, BoardReadArgs } from "../core/board.js";
import type { ElicitationAnswer, ElicitationQuestion } from "../core/elicitation.js";
import type { CallProvenance, Label, Source } from "../core/provenance.js";
import type { CallEffect } from "./audit.js";
import { riskOf, riskRank, type RiskLevel, type ToolPower } from "./tool-powers.js";
import type { Egress, EgressSpec } from "./egress.js";
import type { FileTrust } from "./file-trust.js";
import type { OriginLens, Steering, SteeringSpec } from "./trust-types.js";

/** Permission levels, lowest to highest. A tool declares the level it needs. */
export const PERMISSION_LEVELS = ["NONE", "READ", "WRITE", "EXECUTE", "ADMIN"] as const;
export type PermissionLevel = (typeof PERMISSION_LEVELS)[number];
export { RISK_LEVELS, type RiskLevel } from "./tool-powers.js";

/** The rank of a level, so levels compare with `<`. */
export function levelRank(level: PermissionLevel): number {
  return PERMISSION_LEVELS.indexOf(level);
}

/** What a person is asked before a high-risk tool runs. */
export interface ApprovalRequest {
  tool: string;
  agent: string;
  /** The arguments, with secrets redacted. */
  args: unknown;
  level: PermissionLevel;
  riskLevel: RiskLevel;
  reason: string;
  runId?: string;
  subtaskId?: string;
  /** What the call would do, for the person to see (the tool's `preview`: a diff of an edit). */
  preview?: Record<string, unknown>;
  /** Set when untrusted data steered the call (docs/trust.md): which arguments, and the sources. */
  steering?: Steering;
  /** Set when the call would send private data where nobody named (docs/trust.md): what, where, and from which sources. */
  egress?: Egress;
  /** What the call would do, in words ("write 24 characters to notes.txt"), for the person asked. */
  action?: string;
  /** The lines a person is shown wherever they decide: the action, and why the trust policy asks (src/core/approval-card.ts). */
  card?: string[];
}

/**
 * How a tool's own code puts a question its server asked to a person (the registry makes one per
 * call). `ask` never throws a pause: it says `paused` instead, and the tool must then stop its call
 * (the registry pauses the run once it has). It may be called from any async context (an MCP
 * client's request handler): it runs the ask in the call's own.
 */
export interface InputChannel {
  /** Whether a person can be asked at all (not in a map's item, a direct call, or `troupe tools call`). */
  readonly canAsk: boolean;
  ask(question: ElicitationQuestion): Promise<{ answer: ElicitationAnswer } | { paused: true }>;
  /** Adds a line to the call's audit reason (what was asked and how it was answered). */
  note(text: string): void;
}

/** A person's answer to an approval request. */
export type ApprovalAnswer = { approved: true } | { approved: false; feedback?: string };

/**
 * The run's shared board as a subtask's tools see it (the graph gives one to each subtask): post
 * and read messages. Both throw a ToolError for what cannot be done (an unknown recipient, a full
 * board).
 */
export interface BoardAccess {
  /** Posts a message; `label` is where its text came from (kept when untrusted). */
  post(args: BoardPostArgs, label?: Label): BoardMessage;
  read(args: BoardReadArgs): { messages: BoardMessage[]; more: number };
}

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  /** The workspace root, already resolved to a real path. */
  workspace: string;
  runId?: string;
  threadId?: string;
  /** Who calls: an agent's name, or `operator` for the local person (every level). */
  agent?: string;
  subtaskId?: string;
  signal?: AbortSignal;
  /**
   * The tools this caller may use at all (a run's `tools`): a call to any other is denied before
   * the permission check. It only narrows what the grants allow; it never adds to them.
   */
  allowedTools?: readonly string[];
  /** The API principal behind a direct call (the API key's name), for the audit trail. */
  principal?: string;
  /**
   * The long-term memory namespace of the run's owner (an API key's, or the local user's): the
   * memory tools read and write only there. A direct call without it uses its `principal`'s.
   */
  memoryNamespace?: readonly string[];
  /**
   * A deterministic id of this call (the graph gives `run/subtask/step/call-index`). With one, the
   * registry records the call's outcome (and a file tool's effect) in its write-ahead audit row,
   * and the same call coming again — a resume after a crash — is answered from that row instead
   * of running twice: see `ToolRegistry.call`.
   */
  callId?: string;
  /**
   * Set when no call of this run can have been made before: the run has never been resumed, so
   * no earlier process (or earlier pass of this one) gave a call its id. The registry then skips
   * looking the call id up; without it every call id is looked up.
   */
  firstPass?: boolean;
  /**
   * Asks a person to approve a high-risk call. The graph implements it with LangGraph's
   * `interrupt()`, which throws to pause the run: the registry lets that throw through (the one
   * exception to "a tool call never throws"). Without it, high-risk calls are refused.
   */
  requestApproval?: (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;
  /**
   * Puts a tool server's question to a person, mid-call (MCP elicitation). The graph implements it
   * with `interrupt()`: on a pass after the person answered it returns their answer, otherwise it
   * throws to pause the run (the registry lets that throw through once the call has stopped).
   * Without it no person can be asked, and the server is told decline.
   */
  requestInput?: (question: ElicitationQuestion) => ElicitationAnswer | Promise<ElicitationAnswer>;
  /** Given to a tool's own code by the registry: how a server's question reaches a person (see `InputChannel`). */
  input?: InputChannel;
  /** The run's shared board, inside a run's subtask (`board_post`, `board_read`); absent elsewhere. */
  board?: BoardAccess;
  /**
   * Awaited before a call that can have an effect (it needs more than READ, or is not
   * idempotent) runs: a subtask started from a plan still streaming in waits here until the plan
   * has passed the checks that can still fail it. A rejection refuses the call (`plan_dropped`).
   */
  effectsAllowed?: () => Promise<void>;
  /** The workspace paths the caller's subtask declares it writes (its plan's `writes`): a script may write those. */
  writes?: readonly string[];
  /** How the call's arguments came about, for the trust policy (absent: a trusted caller, such as a person). */
  provenance?: CallProvenance;
  /**
   * How workspace files are labelled (the registry's trust policy sets it): a file tool judges
   * what it read by it and keeps the label of what it writes. Absent without a trust policy.
   */
  fileTrust?: FileTrust;
}

export interface ToolErrorInfo {
  /** A code of the error catalogue (`core/error-codes.ts`). */
  code: ErrorCode;
  message: string;
}

/** Every tool call ends in one of these; a tool never throws into the graph. */
export type ToolOutcome = { ok: true; value: unknown; summary: string; label?: Label } | { ok: false; error: ToolErrorInfo; label?: Label };

/** Where the effect recorded before a call stands now. */
export type EffectState = "before" | "after" | "other";

/**
 * What a tool with side effects on the workspace changes, so a call interrupted by a crash can be
 * settled: the targets' states are recorded before it runs and compared with the workspace when
 * the same call comes again.
 */
export interface ToolEffect<Args = unknown> {
  /** The targets' states now and the states the call is to leave; undefined when it cannot tell. */
  capture(args: Args, context: ToolContext): Promise<CallEffect | undefined>;
  /** Whether the workspace holds the targets' before-states, their after-states, or neither. */
  check(effect: CallEffect, context: ToolContext): Promise<EffectState>;
  /** The value the call returns, derived from its arguments and effect, when the effect is found done. */
  derive(args: Args, effect: CallEffect): unknown;
  /**
   * Settles a call a crash cut short in one step, when checking is not enough: it may finish the
   * call's effect from what it journaled (`after`, with the call's value), or find that nothing
   * happened (`before`: run it). Used instead of `check` and `derive` when present.
   */
  settle?(args: Args, effect: CallEffect, context: ToolContext): Promise<{ state: "before" } | { state: "after"; value: unknown } | { state: "other" }>;
  /** Called once the call's row is complete: what the effect kept for settling (a journal) can go. */
  release?(effect: CallEffect): Promise<void>;
}

export interface ToolDefinition<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: Schema;
  permission: PermissionLevel;
  /** The risk of its riskiest call: derived from `powers` when it has them (see `defineTool`). */
  riskLevel: RiskLevel;
  /** What it can do (its riskiest calls); its risk follows from them. */
  powers?: readonly ToolPower[];
  /** What one call can do, when it depends on the arguments or the caller (a script given a read-only workspace). */
  powersFor?(args: z.infer<Schema>, context: ToolContext): readonly ToolPower[];
  /** Safe to call twice with the same arguments (no side effects, or the same ones): it may be retried. */
  idempotent: boolean;
  timeoutMs: number;
  /**
   * How long a result may be served from the cache (idempotent tools only). Only for tools whose
   * value depends on their arguments alone — not file reads, whose value changes with the files.
   * A function decides per call (an online search is cached, a search of local files is not).
   */
  cacheTtlMs?: number | ((args: z.infer<Schema>) => number);
  /** Whether one call is idempotent, when it depends on the arguments (a GET is, a POST is not); overrides `idempotent`. */
  idempotentFor?(args: z.infer<Schema>): boolean;
  /**
   * The largest value the tool may hand back, as JSON in UTF-8 bytes (default: the registry's,
   * 16 MiB). A tool that can produce more should stop where it produces it; the registry checks
   * again so nothing larger reaches the stash, the checkpoint or a prompt.
   */
  maxResultBytes?: number;
  /** Retries after a transient failure (default 3 for idempotent tools, never for the others). */
  retries?: number;
  /** The level one call needs, when it depends on the arguments (an HTTP POST writes). */
  levelFor?(args: z.infer<Schema>): PermissionLevel;
  /** What a call would do, shown to the person asked to approve it (computed before they are asked; nothing is changed). */
  preview?(args: z.infer<Schema>, context: ToolContext): Promise<Record<string, unknown>>;
  /** The JSON schema shown to models, when it is not derived from `schema` (MCP tools). */
  parameters?: Record<string, unknown>;
  /** The JSON schema of its value, when it declares one: a plan's references into its results are checked by it before anything runs. */
  outputSchema?: Record<string, unknown>;
  /**
   * Its calls wait on another machine (a remote agent), not on this one: they do not take one of
   * the registry's slots, so a long remote task does not hold up local tool calls.
   */
  remote?: boolean;
  /** Its server may put questions to a person mid-call (an MCP server that elicits): a subtask that can call it keeps durable steps. */
  mayAsk?: boolean;
  /** Where the tool comes from: `builtin`, `mcp:<server>`, or `a2a:<card URL>`. */
  source?: string;
  /** What a call changes in the workspace (file tools), for settling a call interrupted by a crash. */
  effect?: ToolEffect<z.infer<Schema>>;
  /** Returns the tool's value; throws a ToolError (or any error) to fail. */
  execute(args: z.infer<Schema>, context: ToolContext): Promise<unknown>;
  /**
   * The workspace paths a call reads and writes, from its arguments as given (unvalidated, and
   * only the literal ones when a plan is checked): plans are ordered by them, and the files a
   * successful call wrote are checked on disk afterwards.
   */
  resources?(args: Record<string, unknown>): { reads?: string[]; writes?: string[] };
  /** A one-line human summary of a value; defaults to a bounded JSON preview. */
  summarize?(value: unknown, args: z.infer<Schema>): string;
  /**
   * Which arguments choose what a call's effect acts on (a path, a URL, code, a subject), or null
   * when this call has no effect outside its value. Checked against the call's provenance before
   * it runs (src/tools/trust-policy.ts). Absent: the tool has no effect.
   */
  targets?(args: Record<string, unknown>): SteeringSpec | null;
  /**
   * The untrusted sources a call's value (or error) comes from, beside its inputs: a web page, an
   * MCP server, a workspace path under `trust.untrusted`. Absent: only its inputs.
   */
  origin?(args: Record<string, unknown>, value: unknown, lens: OriginLens): Source[];
  /**
   * Where a call sends its arguments out of the machine, and which arguments go (src/tools/egress.ts):
   * private data in them needs a destination the task or the config names. Absent: nothing leaves.
   */
  sends?(args: Record<string, unknown>): EgressSpec | null;
  /** What a call would do, in words, for an approval ("write 24 characters to notes.txt"). */
  describe?(args: Record<string, unknown>): string;
}

/** A zod schema of a tool's value as the JSON schema `outputSchema` takes. */
export function outputSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...json } = zodToJsonSchema(schema, { io: "output", unrepresentable: "any" }) as Record<string, unknown>;
  return json;
}

/** The string arguments among `names`, for a tool's `resources`. */
export function pathArgs(args: Record<string, unknown>, ...names: string[]): string[] {
  return names.flatMap((name) => (typeof args[name] === "string" ? [args[name] as string] : []));
}

/** A tool as declared: its risk may be left to its powers. */
export type ToolDeclaration<Schema extends z.ZodType> = Omit<ToolDefinition<Schema>, "riskLevel"> & { riskLevel?: RiskLevel };

/**
 * Declares a tool. The registry validates arguments with `schema` before `execute` runs. A tool
 * with `powers` gets the risk they make it (a declared risk may only be higher); one without
 * them (an MCP tool) must declare its risk.
 */
export function defineTool<Schema extends z.ZodType>(definition: ToolDeclaration<Schema>): ToolDefinition<Schema> {
  if (!/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/.test(definition.name)) {
    throw new Error(`invalid tool name "${definition.name}": letters, digits, '_', '.', '-', starting with a letter`);
  }
  const derived = definition.powers ? riskOf(definition.powers).level : undefined;
  const riskLevel = definition.riskLevel ?? derived;
  if (riskLevel === undefined) throw new Error(`tool "${definition.name}" declares neither its powers nor its risk`);
  if (derived !== undefined && riskRank(riskLevel) < riskRank(derived)) {
    throw new Error(`tool "${definition.name}" declares risk ${riskLevel}, below the ${derived} its powers make it (${riskOf(definition.powers ?? []).why})`);
  }
  return { ...definition, riskLevel };
}

/** The risk of one call, and why: from what this call can do when the tool says, else the tool's. */
export function callRisk(tool: Pick<ToolDefinition, "riskLevel" | "powers" | "powersFor">, args: unknown, context: ToolContext): { level: RiskLevel; why: string } {
  const powers = tool.powersFor ? tool.powersFor(args as never, context) : tool.powers;
  if (!powers) return { level: tool.riskLevel, why: `declared ${tool.riskLevel}-risk` };
  return riskOf(powers);
}
