/**
 * The troupe library: create an engine, run tasks, and extend it with tools, agents and
 * providers. This file is the promise docs/library.md makes: every name here is documented
 * there, under "What the package exports", and a unit test (src/index.test.ts) fails when the
 * two differ. Internals that tests need (the graph, the tool registry, the offline model, …)
 * are exported by `troupe/testing` (src/testing/index.ts), not here.
 */

// The engine.
export { Troupe, createTroupe, type TroupeOptions, type InvokeOptions, type RunView, type LibraryRunRequest } from "./runtime/engine.js";
export type { RunRequest, RunResult, RunMetrics, ResumeDecision, StopReason, RunStatus, DecisionTrace } from "./core/run.js";
export type { RunEvent, StoredEvent } from "./core/events.js";
export type { PlannedSubtask, SubtaskResult } from "./core/plan.js";
export { Budget, type BudgetStop } from "./core/budget.js";
export { DecideRequest, DecisionResult } from "./core/vote.js";
export type { Decision } from "./agents/voter.js";
export { executionGraphMermaid, ExecutionGraph } from "./core/execution-graph.js";

// Extending it: tools, agents, providers, configuration.
export { defineTool, type ToolDefinition, type ToolContext, type ToolOutcome, type PermissionLevel, type RiskLevel } from "./tools/define-tool.js";
export { defineAgent, type AgentDefinition } from "./agents/define-agent.js";
export { defineProvider, type ProviderDefinition, type ModelRole } from "./providers/provider.js";
export { Grant, OPERATOR } from "./tools/permissions.js";
export { defineConfig, TroupeConfig, type ProviderSettings, type ModelPrice } from "./config/config-file.js";
export { TrustConfig, TrustMode } from "./tools/trust-config.js";
export { Label, LabelledValue, SOURCE_KINDS, type Source, type SourceKind, describeLabel, joinLabels, sourceOf, untrustedLabel } from "./core/provenance.js";

// Memory and conversations.
export { memoryNamespaceFor } from "./runtime/memory-owner.js";
export { trimConversation } from "./agents/history.js";
export type { Conversation, Turn } from "./core/conversation.js";
export { type Memory, type MemoryItem, type MemoryHit, type MemorySearchResult, MemoryInput, MEMORY_LIMITS } from "./core/memory.js";
export type { Memories, TroupeMemoryStore } from "./store/index.js";

// Evals.
export { runEval, type EvalRunOptions, type CassetteOptions } from "./eval/runner.js";
export { parseSuite, type Suite } from "./eval/suite.js";
export { compareResults, type Comparison } from "./eval/compare.js";
export type { EvalResults, CaseResult } from "./eval/results.js";
export type { EvalEvent, StoredEvalEvent } from "./eval/events.js";

// Errors.
export { TroupeError, InputError, ConfigError, NotFoundError, ConflictError, ModelError, ToolError, SystemError, isTroupeError, errorMessage, type ErrorCode, type ErrorKind } from "./core/errors.js";
export { ERROR_CODES, errorEntry, isCatalogueCode, type CatalogueCode, type ErrorEntry, type ExitCode } from "./core/error-codes.js";
