/** A tool's risk levels, lowest to highest. */
export const RISK_LEVELS = ["low", "medium", "high"] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];

/**
 * What a tool can do, from which its risk follows: a tool is as risky as the worst thing it can
 * do, whatever it is called. A script that can change or delete any workspace file is as risky as
 * `file_delete`; a tool that only reads is low.
 */
export const TOOL_POWERS = {
  "workspace.read": { risk: "low", does: "reads workspace files" },
  "workspace.write": { risk: "medium", does: "creates or overwrites workspace files" },
  "workspace.delete": { risk: "high", does: "deletes workspace files" },
  "code.isolated": { risk: "low", does: "runs code that sees only its input (no files, no network)" },
  "code.workspace-read": { risk: "medium", does: "runs code that can read every workspace file" },
  "code.workspace-write": { risk: "high", does: "runs code that can change or delete any workspace file" },
  "network.read": { risk: "medium", does: "reaches the network (what a request names leaves the machine)" },
  "network.send": { risk: "medium", does: "sends data over the network" },
  "memory.read": { risk: "low", does: "reads long-term memory" },
  "memory.write": { risk: "medium", does: "writes long-term memory" },
  "memory.delete": { risk: "high", does: "deletes long-term memory" },
  "run.read": { risk: "low", does: "reads what this run or thread holds" },
  "run.write": { risk: "low", does: "posts to this run's shared board" },
} as const satisfies Record<string, { risk: RiskLevel; does: string }>;

export type ToolPower = keyof typeof TOOL_POWERS;

const RANK: Record<RiskLevel, number> = { low: 0, medium: 1, high: 2 };

export function riskRank(level: RiskLevel): number {
  return RANK[level];
}

/** The risk that follows from a set of powers (the highest of them), and why: what the riskiest powers let it do. */
export function riskOf(powers: readonly ToolPower[]): { level: RiskLevel; why: string } {
  let level: RiskLevel = "low";
  for (const power of powers) if (RANK[TOOL_POWERS[power].risk] > RANK[level]) level = TOOL_POWERS[power].risk;
  const worst = powers.filter((power) => TOOL_POWERS[power].risk === level).map((power) => TOOL_POWERS[power].does);
  return { level, why: worst.length > 0 ? worst.join("; ") : "computes from its arguments only" };
}
