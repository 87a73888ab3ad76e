import { type EvidenceIndex, type EvidenceSource, evidenceIndex, refOf } from "../core/evidence.js";
import { OFFLINE_NOTICE } from "../providers/offline/synthesis-rules.js";
import { planView } from "./deps.js";
import type { State } from "./state.js";

type Sourced = EvidenceSource & { text: string };

/** The places a subtask's successful tool calls looked (a URL, a file, a search, a calculation), or just the tools when nothing more is known. */
function refsOf(state: Pick<State, "toolCalls">, subtaskId: string, fallback: boolean): string[] {
  const refs = (state.toolCalls ?? [])
    .filter((call) => call.subtaskId === subtaskId && call.ok)
    .map((call) => refOf(call.tool, call.args) ?? (fallback ? call.tool : undefined))
    .filter((ref): ref is string => ref !== undefined);
  return [...new Set(refs)];
}

/**
 * The research outcomes an answer may rest on: each research subtask that succeeded having looked
 * somewhere (a URL, a file, a search) — its summary, and where it looked. One that consulted
 * nothing is no evidence to index. The synthesizer is asked to cite these (`[s1]`).
 */
export function researchSources(state: Pick<State, "plan" | "results" | "toolCalls">): Sourced[] {
  return planView(state)
    .filter((view) => view.status === "done" && view.agent === "research")
    .map((view) => ({ id: view.id, label: view.label, text: view.summary ?? "", refs: refsOf(state, view.id, false) }))
    .filter((source) => source.refs.length > 0);
}

/**
 * Every outcome a claim of the answer may repeat: the research sources, and each other subtask
 * that succeeded through a tool (a calculation, a file read or written: a verified result).
 */
function verifiedSources(state: Pick<State, "plan" | "results" | "toolCalls">): Sourced[] {
  const research = researchSources(state);
  const others = planView(state)
    .filter((view) => view.status === "done" && !research.some((source) => source.id === view.id))
    .map((view) => ({ id: view.id, label: view.label, text: view.summary ?? "", refs: refsOf(state, view.id, true) }))
    .filter((source) => source.refs.length > 0);
  return [...research, ...others].sort((a, b) => planOrder(state, a.id) - planOrder(state, b.id));
}

function planOrder(state: Pick<State, "plan">, id: string): number {
  return state.plan.findIndex((subtask) => subtask.id === id);
}

/**
 * The evidence index of an answer (null when the run used no research source): each claim
 * mapped to the outcomes it rests on. The offline model's notice of how it answered is not a claim.
 */
export function answerEvidence(state: Pick<State, "plan" | "results" | "toolCalls">, answer: string | null): EvidenceIndex | null {
  if (!answer || researchSources(state).length === 0) return null;
  return evidenceIndex(answer, verifiedSources(state), { notClaims: [OFFLINE_NOTICE] });
}
