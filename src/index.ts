/** The troupe library: create an engine, run tasks, and extend it with tools, agents and providers. */
export { Troupe, createTroupe, type TroupeOptions, type InvokeOptions, type RunView, type LibraryRunRequest } from "./runtime/engine.js";
export { defineTool, type ToolDefinition, type ToolContext, type ToolOutcome, type PermissionLevel, type RiskLevel } from "./tools/define-tool.js";
export { ToolRegistry, type ToolCallReport } from "./tools/registry.js";
export { createBuiltinRegistry, createBuiltinTools, type BuiltinToolSettings } from "./tools/builtin/index.js";
export { PermissionPolicy, Grant, OPERATOR, type PermissionDecision } from "./tools/permissions.js";
export { TrustPolicy, type Steering, type SteeringSpec } from "./tools/trust-policy.js";
export { Label, LabelledValue, SOURCE_KINDS, type Source, type SourceKind, describeLabel, joinLabels, sourceOf, untrustedLabel } from "./core/provenance.js";
export { TrustConfig, TrustMode } from "./tools/trust-config.js";
export { type AuditEntry, type AuditSink, redact } from "./tools/audit.js";
export { ToolsConfig, loadToolsConfig } from "./config/tools-config.js";
export { defineAgent, AgentRegistry, type AgentDefinition } from "./agents/define-agent.js";
export { decide, castVote, type Voter, type Decision } from "./agents/voter.js";
export { tallyVotes, describeDecision, voteSchema, DecideRequest, DecisionResult, VoteRecord, type DecisionOutcome } from "./core/vote.js";
export { BoardMessage, BoardAudience, type BoardReader } from "./core/board.js";
export { ToolIndex, type ToolMatch, type Embedder } from "./tools/discovery.js";
export { offerTools, type ToolDiscovery } from "./agents/tool-offer.js";
export { createAgentRegistry } from "./agents/index.js";
export { defineProvider, type ProviderDefinition, type ModelRole } from "./providers/provider.js";
export { createProviderRegistry, ProviderRegistry, type ModelSet, type ModelChoice, type ModelCandidate } from "./providers/registry.js";
export { defineConfig, TroupeConfig, type ProviderSettings, type ModelPrice } from "./config/config-file.js";
export { BUILTIN_PRICES } from "./providers/prices.js";
export { DEFAULT_CALL_POLICY, type CallPolicy } from "./providers/call-policy.js";
export { Budget, type BudgetStop } from "./core/budget.js";
export type { ModelIncident } from "./core/model-incident.js";
export { OfflineChatModel } from "./providers/offline/offline-chat-model.js";
export { buildGraph, createGraph } from "./graph/build-graph.js";
export * from "./core/errors.js";
export { type CatalogueCode, type CodeOfKind, ERROR_CODES, type ErrorEntry, errorEntry, type ExitCode, type FieldErrorCode, fieldErrorCode, isCatalogueCode, isCodeOfKind } from "./core/error-codes.js";
export type { RunEvent, StoredEvent } from "./core/events.js";
export type { PlannedSubtask, SubtaskView, SubtaskResult, MapTally, ToolOffer } from "./core/plan.js";
export {
  renderExecutionGraph,
  executionGraphMermaid,
  ExecutionGraph,
  ExecutionGraphNode,
  ExecutionGraphEdge,
  NODE_STATUSES,
  type NodeStatus,
  type RenderOptions,
} from "./core/execution-graph.js";
export { findCriticalPath, longestPath, type RunTiming, type TimedSubtask } from "./core/critical-path.js";
export { MappedExecutionReport, MappedItemResult, OverallStatus, overallStatusOf, successfulOutputs, failedInputs } from "./core/map-report.js";
export { MemoryStash, type Stash, type StashEntry, type StashKey, type MapItemRecord } from "./core/stash.js";
export { type Memory, type MemoryItem, type MemoryHit, type MemorySearchResult, MemoryInput, memoryNamespace, MEMORY_LIMITS, type Retrieval } from "./core/memory.js";
export { type Conversation, type Turn, CONVERSATION_LIMITS } from "./core/conversation.js";
export { trimConversation } from "./agents/history.js";
export { SqliteMemoryStore, TroupeMemoryStore, Memories, type MemoryIndexConfig } from "./store/index.js";
export { memoryNamespaceFor } from "./runtime/memory-owner.js";
export type { RunRequest, RunResult, RunMetrics, ResumeDecision, StopReason, RunStatus, DecisionTrace } from "./core/run.js";
export { runEval, newEvalId, type EvalRunOptions, type CassetteOptions } from "./eval/runner.js";
export { parseSuite, parseCases, EvalCase, Expectations, type Suite } from "./eval/suite.js";
export { compareResults, type Comparison } from "./eval/compare.js";
export type { EvalResults, CaseResult, Failure, JudgeOutcome } from "./eval/results.js";
export type { EvalEvent, StoredEvalEvent } from "./eval/events.js";
