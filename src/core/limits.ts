/** Limits and defaults shared by every entry point (docs/configuration.md, "Limits and defaults"). */
export const LIMITS = {
  taskMaxChars: 5_000,
  contextMaxBytes: 10 * 1024,
  maxIterationsMin: 1,
  maxIterationsMax: 50,
  maxIterationsDefault: 3,
  maxSubtasks: 50,
  planRepairAttempts: 2,
  workerMaxSteps: 8,
  repeatLimit: 3,
  subtaskConcurrency: 8,
  toolConcurrency: 5,
  passThreshold: 0.7,
  previewChars: 400,
  /** Items of a mapped subtask run at once (per subtask), unless the run says otherwise. */
  mapConcurrency: 10,
  mapConcurrencyMax: 100,
  /** Failed items of a map whose previews the graph state keeps (the rest are in the stash). */
  mapFailuresKept: 10,
  /** Item tool calls of a map recorded in the trace (all are counted in the metrics). */
  mapTracedCalls: 20,
  /** Files a subtask's result lists as its artifacts (the rest are counted in its summary). */
  artifactsKept: 20,
  /** Prompt tokens one model call may use; prompts are trimmed to fit. */
  promptTokenBudget: 8_000,
  promptTokenBudgetMin: 1_000,
  promptTokenBudgetMax: 1_000_000,
  /** Cases of one eval suite, and how many of them run at once. */
  evalMaxCases: 500,
  evalConcurrency: 4,
  evalConcurrencyMax: 16,
  /** Messages a run's shared board holds, characters in one message, posts one subtask attempt may make, messages one read returns. */
  boardMaxMessages: 200,
  boardMessageMaxChars: 2_000,
  boardPostsPerSubtask: 20,
  boardReadMax: 20,
  /** An agent that may use more tools than this is offered the most relevant `toolDiscoveryTopK` per call, and find_tools. */
  toolDiscoveryThreshold: 15,
  toolDiscoveryTopK: 5,
  /** Votes: the share the winning option needs by default, the voters and options of one decision, a run's critic panel. */
  consensusThreshold: 0.6,
  votersDefault: 3,
  votersMax: 15,
  decideOptionsMax: 10,
  reviewersMax: 7,
} as const;

/** Critic weights for accuracy, completeness, relevance and logic. */
export const CRITIC_WEIGHTS = {
  accuracy: 0.4,
  completeness: 0.3,
  relevance: 0.2,
  logic: 0.1,
} as const;
