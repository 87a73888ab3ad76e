import type { FastifyInstance } from "fastify";
import { InputError, TroupeError } from "../../core/errors.js";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { ToolCallBody, ToolCallResult, ToolList } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

/** The caller named in a direct call's ToolContext when no agent is given (as in `troupe tools call`). */
const DIRECT_CALLER = "operator";

/** GET /tools and POST /tools/call; a call goes through the registry, like every agent's. */
export function registerToolRoutes(api: FastifyInstance, { troupe, docs }: RouteContext): void {
  docs.add({
    method: "get",
    path: "/api/v1/tools",
    summary: "The tools, with the JSON schema of their arguments",
    tags: ["tools"],
    responses: { 200: { description: "the tools", schema: envelopeOf(ToolList) } },
  });
  api.get("/tools", async () => {
    const tools = troupe.tools.list().map((tool) => ({
      name: tool.name,
      description: tool.description,
      permission: tool.permission,
      risk_level: tool.riskLevel,
      idempotent: tool.idempotent,
      timeout_ms: tool.timeoutMs,
      parameters: troupe.tools.spec(tool.name).function.parameters,
    }));
    return ok({ tools, count: tools.length });
  });

  docs.add({
    method: "post",
    path: "/api/v1/tools/call",
    summary: "Call a tool directly (confined to the workspace like any agent's call)",
    tags: ["tools"],
    body: ToolCallBody,
    responses: { 200: { description: "the tool's result", schema: envelopeOf(ToolCallResult) } },
  });
  api.post("/tools/call", async (request, reply) => {
    const body = parseRequestPart(ToolCallBody, request.body);
    if (!troupe.tools.has(body.tool_name)) {
      throw new InputError("unknown_tool", `unknown tool "${body.tool_name}"; available: ${troupe.tools.names().join(", ")}`, { tool_name: body.tool_name });
    }
    if (body.agent !== undefined) {
      const agent = troupe.agents.get(body.agent);
      if (!agent) throw new InputError("unknown_agent", `unknown agent "${body.agent}"; known: ${troupe.agents.names().join(", ")}`);
      if (!agent.tools.includes(body.tool_name)) {
        throw new TroupeError("denied", "tool_not_allowed", `the ${agent.name} agent cannot use ${body.tool_name}; its tools are ${agent.tools.join(", ")}`);
      }
    }
    const controller = new AbortController();
    const onClose = (): void => {
      if (!reply.raw.writableFinished) controller.abort();
    };
    reply.raw.once("close", onClose);
    const started = performance.now();
    try {
      const outcome = await troupe.tools.call(body.tool_name, body.parameters, { workspace: troupe.workspace, agent: body.agent ?? DIRECT_CALLER, signal: controller.signal });
      const durationMs = Math.round(performance.now() - started);
      if (outcome.ok) return ok({ tool_name: body.tool_name, success: true, result: outcome.value, summary: outcome.summary, duration_ms: durationMs });
      const { code, message } = outcome.error;
      const data = { tool_name: body.tool_name, success: false, error: outcome.error, duration_ms: durationMs };
      if (code === "invalid_arguments" || code === "unknown_tool") throw new InputError(code, message, data);
      if (/denied|not_allowed|permission/.test(code)) throw new TroupeError("denied", code, message, data);
      if (code === "timeout") throw new TroupeError("tool", "timeout", message, data);
      throw new TroupeError("tool", code, message, data);
    } finally {
      reply.raw.off("close", onClose);
    }
  });
}
