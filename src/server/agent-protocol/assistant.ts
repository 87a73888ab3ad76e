import { z } from "zod";
import { NotFoundError } from "../../core/errors.js";
import type { Troupe } from "../../runtime/engine.js";
import { ASSISTANT_ID, GRAPH_ID, isTroupeAssistant, iso } from "./views.js";
import { RunInput, RunSettings } from "./wire.js";

/**
 * troupe as LangGraph's clients see it: one graph, `troupe`, and its default assistant (its id is
 * uuid5 of the graph id, as LangGraph names a graph's default assistant). Its graph is troupe's
 * compiled LangGraph drawn as LangGraph draws it; its schemas say what a run takes (input:
 * the task, or messages; context: troupe's run settings) and what a thread's values hold.
 */

const Message = z.object({ type: z.enum(["human", "ai"]), id: z.string(), content: z.string() }).loose();
const Values = z
  .object({
    messages: z.array(Message).describe("the thread's turns (its last 50 runs): each run's task and answer"),
    run_id: z.string().nullable(),
    task: z.string().nullable(),
    plan: z.array(z.object({ id: z.string(), label: z.string(), agent: z.string(), depends_on: z.array(z.string()), status: z.string() })),
    results: z.record(z.string(), z.object({ status: z.string(), summary: z.string().optional(), error: z.string().optional() })),
    answer: z.string().nullable(),
    status: z.string().nullable(),
    stop_reason: z.string().nullable(),
  })
  .describe("a thread's values: its latest run's task, plan, results and answer, and the conversation");

/** When troupe's assistant says it was made: fixed, so its answers do not change from call to call. */
const CREATED = iso(0);

const jsonSchema = (schema: z.ZodType, io: "input" | "output"): Record<string, unknown> => {
  const json = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;
  delete json.$schema;
  return json;
};

export function assistantView(): Record<string, unknown> {
  return {
    assistant_id: ASSISTANT_ID,
    graph_id: GRAPH_ID,
    name: GRAPH_ID,
    description: "troupe: plans a task as a graph of subtasks, runs them in parallel on tool-using agents, reviews the work and answers with a decision trace",
    config: {},
    context: {},
    metadata: { created_by: "system" },
    version: 1,
    created_at: CREATED,
    updated_at: CREATED,
  };
}

/** The assistant an id names, or 404. */
export function requireAssistant(id: string): Record<string, unknown> {
  if (!isTroupeAssistant(id)) throw new NotFoundError("assistant_not_found", `there is no assistant ${id.slice(0, 100)}: troupe serves one, troupe (${ASSISTANT_ID})`, { assistant_id: id.slice(0, 100) });
  return assistantView();
}

/** The graph as LangGraph draws it (`Graph.toJSON`): troupe's nodes and edges. */
export async function drawnGraph(troupe: Troupe, xray: boolean): Promise<Record<string, unknown>> {
  const graph = await troupe.graph.getGraphAsync({ xray });
  return graph.toJSON() as unknown as Record<string, unknown>;
}

export function assistantSchemas(): Record<string, unknown> {
  const state = jsonSchema(Values, "output");
  return {
    graph_id: GRAPH_ID,
    input_schema: jsonSchema(RunInput, "input"),
    output_schema: state,
    state_schema: state,
    config_schema: { type: "object", properties: { configurable: jsonSchema(RunSettings, "input") } },
    context_schema: jsonSchema(RunSettings, "input"),
  };
}
