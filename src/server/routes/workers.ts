import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ConflictError, NotFoundError } from "../../core/errors.js";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { TaskParams, WorkerView } from "../schemas.js";
import { parseRequestPart } from "../validation.js";
import { workerView } from "./system.js";

const WorkerList = z.object({ items: z.array(WorkerView) });
const WorkerDrained = z.object({ worker: z.string(), draining: z.boolean() });

/**
 * GET /workers and POST /workers/:id/drain: the worker processes sharing a Postgres database
 * (their heartbeats, runs held, takeovers), and a drain sent to one of them from any process —
 * it stops taking runs, puts the runs it holds back in the queue at their last checkpoint, and
 * exits. On SQLite there are no workers but the server itself: 409 `no_shared_queue`.
 */
export function registerWorkerRoutes(api: FastifyInstance, { troupe, docs }: RouteContext): void {
  const registry = (): NonNullable<typeof troupe.store.workers> => {
    const { workers } = troupe.store;
    if (!workers) throw new ConflictError("no_shared_queue", "workers exist only on Postgres (TROUPE_DATABASE_URL): with SQLite the server runs its own tasks");
    return workers;
  };
  docs.add({
    method: "get",
    path: "/api/v1/workers", operationId: "listWorkers", errors: ["no_shared_queue"],
    summary: "The worker processes sharing the database, with their heartbeats, runs held and lease takeovers (Postgres)",
    tags: ["system"],
    responses: { 200: { description: "the workers heard from in the last ten minutes", schema: envelopeOf(WorkerList) } },
  });
  api.get("/workers", async () => ok({ items: (await registry().list()).map(workerView) }));

  docs.add({
    method: "post",
    path: "/api/v1/workers/{id}/drain", operationId: "drainWorker", errors: ["no_shared_queue", "worker_not_found"],
    summary: "Drain a worker: it takes no more runs, its runs go back to the queue at their last checkpoint, and it exits (Postgres)",
    tags: ["system"],
    params: TaskParams,
    responses: { 202: { description: "the drain was sent", schema: envelopeOf(WorkerDrained) } },
  });
  api.post("/workers/:id/drain", async (request, reply) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const worker = (await registry().list()).find((candidate) => candidate.id === id && candidate.alive);
    if (!worker) throw new NotFoundError("worker_not_found", `no live worker with id ${id}`, { worker: id });
    await troupe.store.control?.send({ action: "drain", worker: id });
    reply.code(202);
    return ok({ worker: id, draining: true }, "drain sent: the worker stops taking runs and puts its runs back in the queue");
  });
}
