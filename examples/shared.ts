import type { StoredEvent } from "../src/core/events.js";
import { createTroupe, type Troupe } from "../src/runtime/engine.js";

/**
 * Opens troupe on whatever provider the environment configures (TROUPE_PROVIDER, or the offline
 * model when none is set) and says which one it is.
 */
export async function openExample(): Promise<Troupe> {
  const troupe = await createTroupe();
  const choice = troupe.models.choice.worker;
  const where = troupe.providerSource === "default" ? "the offline rule-based model (set TROUPE_PROVIDER for a real one)" : `${choice.provider}:${choice.model}`;
  console.log(`troupe example on ${where}; workspace ${troupe.workspace}\n`);
  return troupe;
}

/** A compact progress line per event. */
export function logEvent(event: StoredEvent): void {
  if (event.type === "plan-ready") {
    console.log(`plan (${event.subtasks.length} subtasks):`);
    for (const subtask of event.subtasks) {
      const after = subtask.dependsOn.length > 0 ? ` ← ${subtask.dependsOn.join(", ")}` : "";
      console.log(`  ${subtask.id} [${subtask.agent}] ${subtask.label}${after}`);
    }
  } else if (event.type === "subtask-end") {
    console.log(`  ${event.subtaskId} ${event.status} in ${event.durationMs} ms${event.error ? `: ${event.error}` : ""}`);
  } else if (event.type === "tool-call") {
    console.log(`    · ${event.tool}: ${event.preview}`);
  } else if (event.type === "critic-verdict") {
    console.log(`critic: ${event.verdict.passed ? "passed" : "not passed"} (${event.verdict.confidence})`);
  }
}
