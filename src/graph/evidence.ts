import { type EvidenceSource, refOf } from "../core/evidence.js";
import { planView } from "./deps.js";
import type { State } from "./state.js";

/**
 * The research outcomes an answer may rest on: each research subtask that succeeded having looked
 * somewhere (a URL, a file, a search) — its summary, and where it looked. One that consulted
 * nothing is no evidence to index.
 */
export function researchSources(state: Pick<State, "plan" | "results" | "toolCalls">): Array<EvidenceSource & { text: string }> {
  return planView(state)
    .filter((view) => view.status === "done" && view.agent === "research")
    .map((view) => ({
      id: view.id,
      label: view.label,
      text: view.summary ?? "",
      refs: [
        ...new Set(
          (state.toolCalls ?? [])
            .filter((call) => call.subtaskId === view.id && call.ok)
            .map((call) => refOf(call.tool, call.args))
            .filter((ref): ref is string => ref !== undefined),
        ),
      ],
    }))
    .filter((source) => source.refs.length > 0);
}
