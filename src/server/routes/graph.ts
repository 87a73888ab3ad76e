import type { FastifyInstance } from "fastify";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { GraphQuery, TaskGraph, TaskGraphMermaid, TaskParams } from "../schemas.js";
import { executionGraphMermaid } from "../../core/execution-graph.js";
import { parseRequestPart } from "../validation.js";

/**
 * GET /tasks/:id/graph: the execution graph drawn by code from the plan and the results (the
 * renderer `troupe runs show --json | --mermaid` uses): nodes with statuses PENDING, RUNNING,
 * SUCCESS, PARTIAL_SUCCESS, FAILED, SKIPPED, summaries, durations and map items; edges labelled
 * with the arguments they feed. As nodes and edges, or Mermaid.
 */
export function registerGraphRoutes(api: FastifyInstance, { tasks, docs }: RouteContext): void {
  docs.add({
    method: "get",
    path: "/api/v1/tasks/{id}/graph", operationId: "getTaskGraph", errors: ["task_not_found"],
    summary: "The task's execution graph: subtasks with statuses and their data dependencies",
    tags: ["tasks"],
    params: TaskParams,
    query: GraphQuery,
    responses: { 200: { description: "{ nodes, edges }, or { format: mermaid, mermaid } with ?format=mermaid", schema: envelopeOf(TaskGraph.or(TaskGraphMermaid)) } },
  });
  api.get("/tasks/:id/graph", async (request) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const { format } = parseRequestPart(GraphQuery, request.query);
    const record = await tasks.record(request.principal, id);
    const graph = await tasks.graph(record);
    if (format === "mermaid") return ok({ format: "mermaid" as const, mermaid: executionGraphMermaid(graph) });
    return ok(graph);
  });
}
