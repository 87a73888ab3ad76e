import type { RunEvent } from "../core/events.js";
import { reflectionTypeOf } from "../core/reflection.js";
import type { CriticVerdict } from "../core/review.js";
import type { Store } from "../store/index.js";

/**
 * What a run's events add to the figures kept across runs: each critic verdict, by type
 * (reflection statistics), and each subtask that finished, by agent and tool (the durations plan
 * estimates start from). Written beside the run, never in its way: a failed write is dropped.
 */
export class RunStatsRecorder {
  readonly #store: Store;
  readonly #runId: string;
  readonly #earlier: () => Promise<CriticVerdict | undefined>;
  /** What each subtask runs on: its agent (as assigned) and its direct tool. */
  readonly #subtasks = new Map<string, { agent: string; tool: string | null }>();
  #previous: CriticVerdict | undefined;
  #seenVerdict = false;
  readonly #writes: Array<Promise<void>> = [];

  /** `earlier`: the run's last verdict before this drive (a resumed run), read only when needed. */
  constructor(store: Store, runId: string, earlier: () => Promise<CriticVerdict | undefined>) {
    this.#store = store;
    this.#runId = runId;
    this.#earlier = earlier;
  }

  event(event: RunEvent): void {
    switch (event.type) {
      case "plan-ready":
        for (const subtask of event.subtasks) this.#subtasks.set(subtask.id, { agent: subtask.agent, tool: subtask.tool ?? null });
        break;
      case "subtask-planned":
        this.#subtasks.set(event.subtask.id, { agent: event.subtask.agent, tool: event.subtask.tool ?? null });
        break;
      case "subtask-start": {
        const known = this.#subtasks.get(event.subtaskId);
        this.#subtasks.set(event.subtaskId, { agent: event.agent, tool: known?.tool ?? null });
        break;
      }
      case "agent-assign": {
        const known = this.#subtasks.get(event.subtaskId);
        this.#subtasks.set(event.subtaskId, { agent: event.agent, tool: known?.tool ?? null });
        break;
      }
      case "subtask-end": {
        const known = this.#subtasks.get(event.subtaskId);
        if (event.status === "done" && known) this.#write(this.#store.stats.recordDuration(known.agent, known.tool, event.durationMs));
        break;
      }
      case "critic-verdict":
        this.#write(this.#reflection(event.verdict));
        break;
      default:
        break;
    }
  }

  async #reflection(verdict: CriticVerdict): Promise<void> {
    if (!this.#seenVerdict && verdict.iteration > 1) this.#previous = await this.#earlier();
    this.#seenVerdict = true;
    const type = reflectionTypeOf(verdict.iteration > 1 ? this.#previous : undefined);
    this.#previous = verdict;
    await this.#store.stats.recordReflection({ runId: this.#runId, iteration: verdict.iteration, type, passed: verdict.passed, confidence: verdict.confidence, at: Date.now() });
  }

  #write(work: Promise<void>): void {
    this.#writes.push(work.catch(() => {}));
  }

  /** Waits for what the events caused to be written. */
  async settled(): Promise<void> {
    await Promise.all(this.#writes);
  }
}
