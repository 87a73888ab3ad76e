import type { z } from "zod";

/** Permission levels, lowest to highest. A tool declares the level it needs. */
export const PERMISSION_LEVELS = ["NONE", "READ", "WRITE", "EXECUTE", "ADMIN"] as const;
export type PermissionLevel = (typeof PERMISSION_LEVELS)[number];
export type RiskLevel = "low" | "medium" | "high";

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  /** The workspace root, already resolved to a real path. */
  workspace: string;
  runId?: string;
  threadId?: string;
  agent?: string;
  subtaskId?: string;
  signal?: AbortSignal;
}

export interface ToolErrorInfo {
  code: string;
  message: string;
}

/** Every tool call ends in one of these; a tool never throws into the graph. */
export type ToolOutcome = { ok: true; value: unknown; summary: string } | { ok: false; error: ToolErrorInfo };

export interface ToolDefinition<Schema extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: Schema;
  permission: PermissionLevel;
  riskLevel: RiskLevel;
  /** Safe to call twice with the same arguments (no side effects, or the same ones). */
  idempotent: boolean;
  timeoutMs: number;
  /** Returns the tool's value; throws a ToolError (or any error) to fail. */
  execute(args: z.infer<Schema>, context: ToolContext): Promise<unknown>;
  /** A one-line human summary of a value; defaults to a bounded JSON preview. */
  summarize?(value: unknown, args: z.infer<Schema>): string;
}

/** Declares a tool. The registry validates arguments with `schema` before `execute` runs. */
export function defineTool<Schema extends z.ZodType>(definition: ToolDefinition<Schema>): ToolDefinition<Schema> {
  if (!/^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/.test(definition.name)) {
    throw new Error(`invalid tool name "${definition.name}": letters, digits, '_', '.', '-', starting with a letter`);
  }
  return definition;
}
