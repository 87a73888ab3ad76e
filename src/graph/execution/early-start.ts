import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import type { PlannedSubtask } from "../../core/plan.js";
import { orderStreamed } from "../../core/plan-check.js";
import { stableStringify } from "../../core/text.js";
import { emit, type GraphDeps } from "../deps.js";
import type { State, Update } from "../state.js";
import { Dispatcher, executed } from "./dispatcher.js";

/** Subtasks handed over one at a time by a producer, read by a consumer with `for await`. */
class SubtaskQueue implements AsyncIterable<PlannedSubtask> {
  readonly #items: PlannedSubtask[] = [];
  #closed = false;
  #wake: (() => void) | undefined;

  push(item: PlannedSubtask): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<PlannedSubtask> {
    for (;;) {
      const item = this.#items.shift();
      if (item) yield item;
      else if (this.#closed) return;
      else await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

/**
 * A streamed plan's early starts (LLMCompiler's task-fetching unit): what the planner node hands
 * the subtasks its model has finished writing, and that read as valid on their own, while the
 * rest of the plan still streams in. Each is handed to a speculative Dispatcher at once and starts
 * as soon as its inputs exist; its calls with effects wait until the plan is judged whole.
 *
 * The planner node only offers subtasks, says when its stream has ended, and then either drops
 * what started (`drop`: no valid plan) or runs the judged plan (`runPlan`). The consumer runs in
 * the node that made this (not in the planner's task), so the subtasks' tasks are that node's.
 */
export class EarlyStart {
  readonly #deps: GraphDeps;
  readonly #state: State;
  readonly #config: LangGraphRunnableConfig;
  readonly #queue = new SubtaskQueue();
  /** The subtasks started so far, in plan order: the plan as far as it has streamed in. */
  readonly #arrived: PlannedSubtask[] = [];
  #dispatcher: Dispatcher;
  readonly #consuming: Promise<void>;

  constructor(deps: GraphDeps, state: State, config: LangGraphRunnableConfig) {
    this.#deps = deps;
    this.#state = state;
    this.#config = config;
    this.#dispatcher = new Dispatcher(deps, { state, plan: () => this.#arrived }, config, { speculative: true });
    this.#consuming = this.#consume();
  }

  async #consume(): Promise<void> {
    let accepting = true;
    for await (const subtask of this.#queue) {
      if (!accepting) continue;
      const next = orderStreamed(this.#arrived, subtask, this.#deps);
      if (!next) {
        accepting = false;
        continue;
      }
      this.#arrived.push(next);
      emit(this.#config, { type: "subtask-planned", subtask: next });
      this.#dispatcher.add(next);
    }
  }

  /** A subtask the planner's model has finished writing, past the checks a plan's start can fail. */
  offer(subtask: PlannedSubtask): void {
    this.#queue.push(subtask);
  }

  /** The planner's stream has ended (or broke a limit): nothing more is offered. */
  close(): void {
    this.#queue.close();
  }

  /** Closes the offers and waits until every subtask offered has been handed to the dispatcher. */
  async settled(): Promise<void> {
    this.#queue.close();
    await this.#consuming;
  }

  /** No valid plan came of it: what started is stopped, its results are not kept and its held effects never happen. */
  async drop(reason: string): Promise<void> {
    this.#dispatcher.abort(reason);
    await this.#dispatcher.finish();
  }

  /**
   * Runs the plan, judged valid as a whole, to the end: what started early goes on (unless a
   * retried call wrote another plan: then it is dropped and the plan starts over), the rest is
   * added, and the update is the work done, due for review.
   */
  async runPlan(plan: readonly PlannedSubtask[]): Promise<Update> {
    // What started early must be the start of the plan as judged whole; if a retried call wrote another plan, start over.
    if (this.#arrived.some((subtask, index) => stableStringify(subtask) !== stableStringify(plan[index]))) {
      await this.drop("the plan changed while it streamed");
      this.#arrived.length = 0;
      this.#dispatcher = new Dispatcher(this.#deps, { state: this.#state, plan: () => plan }, this.#config);
    }
    // The whole plan before it is confirmed: a worker learns then whether its subtask is the plan's only one (graph/route.ts).
    const started = this.#arrived.length;
    this.#arrived.splice(0, this.#arrived.length, ...plan);
    this.#dispatcher.confirm();
    for (const subtask of plan.slice(started)) this.#dispatcher.add(subtask);
    return executed(await this.#dispatcher.finish());
  }
}
