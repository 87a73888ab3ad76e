import { REFLECTION_TYPES, type ReflectionStats, type ReflectionType, reflectionCounts } from "../../core/reflection.js";

/** One critic verdict, for the reflection statistics. */
export interface ReflectionRecord {
  runId: string;
  iteration: number;
  type: ReflectionType;
  passed: boolean;
  confidence: number;
  at: number;
}

/** How long an agent's subtasks (with a direct tool, or a worker's) took in earlier runs: plan estimates start from it. */
export interface DurationStat {
  agent: string;
  /** The direct tool, or null for a worker subtask. */
  tool: string | null;
  count: number;
  meanMs: number;
}

/**
 * Figures kept across runs: each critic verdict (reflection statistics, seed 001 §3.1) and the
 * durations of finished subtasks by agent and tool (the plan's time estimates, seed 001 §2.2).
 */
export interface RunStatsStore {
  /** Keeps a verdict (a verdict recorded again for the same run and round replaces it). */
  recordReflection(record: ReflectionRecord): Promise<void>;
  reflections(filter?: { runId?: string; since?: number }): Promise<ReflectionStats>;
  /** Adds one finished subtask's duration. */
  recordDuration(agent: string, tool: string | null, durationMs: number): Promise<void>;
  durations(): Promise<DurationStat[]>;
}

/** Rows of `type, total, passed, confidence_sum` as the statistics. */
export function reflectionStatsOf(rows: Array<{ type: string; total: number; passed: number; confidence_sum: number }>): ReflectionStats {
  const byType = Object.fromEntries(REFLECTION_TYPES.map((type) => [type, reflectionCounts(0, 0, 0)])) as ReflectionStats["byType"];
  let total = 0;
  let passed = 0;
  let confidence = 0;
  for (const row of rows) {
    const type = row.type as ReflectionType;
    if (!REFLECTION_TYPES.includes(type)) continue;
    byType[type] = reflectionCounts(Number(row.total), Number(row.passed), Number(row.confidence_sum));
    total += Number(row.total);
    passed += Number(row.passed);
    confidence += Number(row.confidence_sum);
  }
  return { ...reflectionCounts(total, passed, confidence), byType };
}
