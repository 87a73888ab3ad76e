import type { FastifyInstance } from "fastify";
import { InputError, TroupeError } from "../../core/errors.js";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { ToolCallBody, ToolCallResult, ToolList } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

/**
 * GET /tools and POST /tools/call. A call goes through the tool registry like every agent's:
 * arguments validated, permissions checked, one audit row. Without `agent` the caller acts as
 * the local operator (as `troupe tools call` without `--as`: every level, no approval), with the
 * API key's name recorded as the principal; with `agent` that agent's grants apply, and a
 * high-risk call is refused at once (no one can approve it inside a request), never left waiting.
 */
export function registerToolRoutes(api: FastifyInstance, { troupe, docs }: RouteContext): void {
  docs.add({
    method: "get",
    path: "/api/v1/tools", operationId: "listTools",
    summary: "The tools: the level each needs, its risk, whether it waits for approval, the agents that reach it, and its JSON schema",
    tags: ["tools"],
    responses: { 200: { description: "the tools", schema: envelopeOf(ToolList) } },
  });
  api.get("/tools", async () => {
    const agents = troupe.agents.list();
    const tools = troupe.tools.list().map((tool) => ({
      name: tool.name,
      description: tool.description,
      permission: tool.permission,
      risk_level: tool.riskLevel,
      needs_approval: troupe.policy.needsApproval(tool, "agent"),
      idempotent: tool.idempotent,
      timeout_ms: tool.timeoutMs,
      source: tool.source ?? "builtin",
      agents: agents.filter((agent) => agent.tools.includes(tool.name)).map((agent) => agent.name),
      parameters: troupe.tools.spec(tool.name).function.parameters,
    }));
    return ok({ tools, count: tools.length });
  });

  docs.add({
    method: "post",
    path: "/api/v1/tools/call", operationId: "callTool", errors: ["unknown_tool", "unknown_agent", "invalid_arguments", "tool_not_allowed", "permission_denied", "approval_required", "tool_failed", "timeout"],
    summary: "Call a tool directly, through permissions and the audit trail (as the operator, or as `agent`)",
    tags: ["tools"],
    body: ToolCallBody,
    responses: { 200: { description: "the tool's result", schema: envelopeOf(ToolCallResult) } },
  });
  api.post("/tools/call", async (request, reply) => {
    const body = parseRequestPart(ToolCallBody, request.body);
    if (!troupe.tools.has(body.tool_name)) {
      throw new InputError("unknown_tool", `unknown tool "${body.tool_name}"; available: ${troupe.tools.names().join(", ")}`, { tool_name: body.tool_name });
    }
    const controller = new AbortController();
    const onClose = (): void => {
      if (!reply.raw.writableFinished) controller.abort();
    };
    reply.raw.once("close", onClose);
    const started = performance.now();
    try {
      const outcome = await troupe.callTool(body.tool_name, body.parameters, {
        ...(body.agent !== undefined ? { agent: body.agent } : {}),
        principal: request.principal.id,
        signal: controller.signal,
      });
      const durationMs = Math.round(performance.now() - started);
      if (outcome.ok) return ok({ tool_name: body.tool_name, success: true, result: outcome.value, summary: outcome.summary, duration_ms: durationMs });
      const { code, message } = outcome.error;
      const data = { tool_name: body.tool_name, success: false, error: outcome.error, duration_ms: durationMs };
      // The code's kind decides the status (the catalogue's): bad arguments 400, a denial 403, a failure 422.
      throw new TroupeError(code, message, data);
    } finally {
      reply.raw.off("close", onClose);
    }
  });
}
