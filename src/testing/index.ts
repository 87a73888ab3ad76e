export { type ScriptedCall, ScriptedChatModel, type ScriptedChatModelOptions, type ScriptStep } from "./scripted-chat-model.js";
export { ObedientChatModel } from "./obedient-chat-model.js";
export { answerStep, finalStep, planStep, questionStep, reviewStep, subtask, toolStep } from "./script.js";
export { providers, readScript, scriptedProvider } from "./scripted-provider.js";
export { modelSetOf } from "./model-set.js";
export { FakeOpenAIServer, fakeEmbedding } from "./fake-openai-server.js";
export { catalogueTools, LABELLED_SUBTASKS, type LabelledSubtask } from "./tool-catalogue.js";
export { FakeAnthropicServer } from "./fake-anthropic-server.js";
export { type Fault, type FakeRequest, FakeProviderServer } from "./fake-server.js";
export { type SchemaFill, SchemaFollowingChatModel, type SchemaFollowingCall, valueFromSchema } from "./schema-following-chat-model.js";
export { HashingEmbeddings } from "./hashing-embeddings.js";
export { MISBEHAVIOURS, type Misbehaviour, misbehave, type WireAnswer } from "./misbehaviour.js";

// Internals a test (or a benchmark) of your own may need, which the main entry does not promise
// (docs/library.md lists what it does): the graph, the tool platform's parts, the offline model,
// the stash, the plan's and the run's helpers. They may change between versions.
export { buildGraph, createGraph } from "../graph/build-graph.js";
export { ToolRegistry, type ToolCallReport } from "../tools/registry.js";
export { createBuiltinRegistry, createBuiltinTools, type BuiltinToolSettings } from "../tools/builtin/index.js";
export { PermissionPolicy, type PermissionDecision } from "../tools/permissions.js";
export { TrustPolicy, type Steering, type SteeringSpec } from "../tools/trust-policy.js";
export { type AuditEntry, type AuditSink, redact } from "../tools/audit.js";
export { ToolsConfig, loadToolsConfig } from "../config/tools-config.js";
export { ToolIndex, type ToolMatch, type Embedder } from "../tools/discovery.js";
export { AgentRegistry } from "../agents/define-agent.js";
export { createAgentRegistry } from "../agents/index.js";
export { offerTools, type ToolDiscovery } from "../agents/tool-offer.js";
export { decide, castVote, type Voter } from "../agents/voter.js";
export { tallyVotes, describeDecision, voteSchema, VoteRecord, type DecisionOutcome } from "../core/vote.js";
export { BoardMessage, BoardAudience, type BoardReader } from "../core/board.js";
export { createProviderRegistry, ProviderRegistry, type ModelSet, type ModelChoice, type ModelCandidate } from "../providers/registry.js";
export { BUILTIN_PRICES } from "../providers/prices.js";
export { DEFAULT_CALL_POLICY, type CallPolicy } from "../providers/call-policy.js";
export { OfflineChatModel } from "../providers/offline/offline-chat-model.js";
export type { ModelIncident } from "../core/model-incident.js";
export type { SubtaskView, MapTally, ToolOffer } from "../core/plan.js";
export { renderExecutionGraph, ExecutionGraphNode, ExecutionGraphEdge, NODE_STATUSES, type NodeStatus, type RenderOptions } from "../core/execution-graph.js";
export { findCriticalPath, longestPath, type RunTiming, type TimedSubtask } from "../core/critical-path.js";
export { MappedExecutionReport, MappedItemResult, OverallStatus, overallStatusOf, successfulOutputs, failedInputs } from "../core/map-report.js";
export { MemoryStash, type Stash, type StashEntry, type StashKey, type MapItemRecord } from "../core/stash.js";
export { memoryNamespace, type Retrieval } from "../core/memory.js";
export { CONVERSATION_LIMITS } from "../core/conversation.js";
export { SqliteMemoryStore, type MemoryIndexConfig } from "../store/index.js";
export { type CodeOfKind, type FieldErrorCode, fieldErrorCode, isCodeOfKind } from "../core/error-codes.js";
