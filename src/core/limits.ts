/** Limits and defaults shared by every entry point (DESIGN.md, "Limits and defaults"). */
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
} as const;

/** Critic weights for accuracy, completeness, relevance and logic. */
export const CRITIC_WEIGHTS = {
  accuracy: 0.4,
  completeness: 0.3,
  relevance: 0.2,
  logic: 0.1,
} as const;
