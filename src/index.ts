/** The troupe library: create an engine, run tasks, and extend it with tools, agents and providers. */
export { Troupe, createTroupe, type TroupeOptions, type InvokeOptions, type RunView } from "./runtime/engine.js";
export { defineTool, type ToolDefinition, type ToolContext, type ToolOutcome, type PermissionLevel, type RiskLevel } from "./tools/define-tool.js";
export { ToolRegistry, type ToolCallReport } from "./tools/registry.js";
export { createBuiltinRegistry, createBuiltinTools, type BuiltinToolSettings } from "./tools/builtin/index.js";
export { PermissionPolicy, Grant, OPERATOR, type PermissionDecision } from "./tools/permissions.js";
export { type AuditEntry, type AuditSink, redact } from "./tools/audit.js";
export { ToolsConfig, loadToolsConfig } from "./config/tools-config.js";
export { defineAgent, AgentRegistry, type AgentDefinition } from "./agents/define-agent.js";
export { createAgentRegistry } from "./agents/index.js";
export { defineProvider, type ProviderDefinition, type ModelRole } from "./providers/provider.js";
export { createProviderRegistry, ProviderRegistry, type ModelSet } from "./providers/registry.js";
export { OfflineChatModel } from "./providers/offline/offline-chat-model.js";
export { buildGraph, createGraph } from "./graph/build-graph.js";
export * from "./core/errors.js";
export type { RunEvent, StoredEvent } from "./core/events.js";
export type { PlannedSubtask, SubtaskView, SubtaskResult } from "./core/plan.js";
export type { RunRequest, RunResult, RunMetrics, ResumeDecision, StopReason, RunStatus, DecisionTrace } from "./core/run.js";
