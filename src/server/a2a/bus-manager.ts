import { DefaultExecutionEventBus, type ExecutionEventBus, type ExecutionEventBusManager } from "@a2a-js/sdk/server";

/**
 * The SDK's event buses, one per task, with two things added. A bus can be found by the run's id
 * as well as by the id the SDK made for the request (`link`): an A2A task is a run, and
 * resubscribing or cancelling names the run. And a run with no bus yet — started through the REST
 * API, driven by another process (a worker on Postgres), taken up after a restart, or whose stream
 * was dropped — gets one made for it on demand (`bridge`), which follows the run wherever it is
 * driven, so a client can resubscribe to any run that is going. The bridge finishes the bus at
 * once when there is nothing to follow (no such run, or it rests). Buses are settled as soon as
 * their executor returns (a run waiting for a person has nothing more to say until someone answers).
 */
export class RunBusManager implements ExecutionEventBusManager {
  readonly #buses = new Map<string, ExecutionEventBus>();
  readonly #bridge: (runId: string, bus: ExecutionEventBus) => void;

  /** `bridge` starts telling a run's events to a new bus (and finishes it when the run rests, or at once when there is no run to follow). */
  constructor(bridge: (runId: string, bus: ExecutionEventBus) => void) {
    this.#bridge = bridge;
  }

  createOrGetByTaskId(taskId: string): ExecutionEventBus {
    let bus = this.#buses.get(taskId);
    if (!bus) {
      bus = new DefaultExecutionEventBus();
      this.#buses.set(taskId, bus);
    }
    return bus;
  }

  getByTaskId(taskId: string): ExecutionEventBus | undefined {
    const found = this.#buses.get(taskId);
    if (found) return found;
    // Whether the run is there and going is only known from the store (asynchronously): the bridge finds out.
    const bus = new DefaultExecutionEventBus();
    this.#buses.set(taskId, bus);
    this.#bridge(taskId, bus);
    return bus;
  }

  /** Makes a bus findable by a run's id too. */
  link(runId: string, bus: ExecutionEventBus): void {
    if (!this.#buses.has(runId)) this.#buses.set(runId, bus);
  }

  cleanupByTaskId(taskId: string): void {
    const bus = this.#buses.get(taskId);
    if (!bus) return;
    for (const [key, value] of [...this.#buses]) if (value === bus) this.#buses.delete(key);
    bus.removeAllListeners();
  }

  settleByTaskId(taskId: string, bus: ExecutionEventBus): boolean {
    bus.finished();
    this.cleanupByTaskId(taskId);
    return true;
  }

  /** Buses open now (for tests and shutdown). */
  get size(): number {
    return new Set(this.#buses.values()).size;
  }
}
