import { z } from "zod";
import { type CriticOutput, CriticScores } from "./review.js";

function buildReviewWire(subtaskIds: readonly string[]) {
  const ids = [...new Set(subtaskIds)];
  const redo = ids.length > 0 ? z.array(z.enum(ids as [string, ...string[]])).max(ids.length) : z.array(z.string()).max(0);
  return z.object({
    scores: CriticScores,
    // What issues, redo and replan mean is the critic's system prompt's to say, once.
    issues: z.array(z.string()).default([]),
    redo: ids.length > 0 ? redo.default([]) : redo.default([]).describe("always []: the plan has no subtasks"),
    replan: z.boolean().default(false),
  });
}

export type ReviewWireSchema = z.ZodType<CriticOutput>;

const built = new Map<string, ReviewWireSchema>();
const BUILT_KEPT = 32;

/**
 * The critic's answer schema for a plan: `redo` names only the plan's subtask ids (an enum;
 * nothing when the plan has none), every field is required on the wire. Absent `issues`, `redo`
 * and `replan` still read as none, as scripted reviews write them. The same ids give the same
 * schema object.
 */
export function reviewWireSchema(subtaskIds: readonly string[]): ReviewWireSchema {
  const key = JSON.stringify(subtaskIds);
  let schema = built.get(key);
  if (!schema) {
    schema = buildReviewWire(subtaskIds);
    if (built.size >= BUILT_KEPT) built.delete(built.keys().next().value as string);
    built.set(key, schema);
  }
  return schema;
}
