import type { FastifyInstance } from "fastify";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { DecideBody, DecideResult } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

/**
 * POST /decide: a collaborative decision, as `troupe decide` makes it — each voter votes for an
 * option with a confidence and a reason, and the (weighted) share of the leading option is set
 * against the threshold. A tie or no consensus is a 200 with `decision: null` and `reached:
 * false`: the vote happened, and that is what it came to.
 */
export function registerDecideRoutes(api: FastifyInstance, { troupe, docs, metrics }: RouteContext): void {
  docs.add({
    method: "post",
    path: "/api/v1/decide", operationId: "decide", errors: ["unknown_agent", "unknown_voter", "invalid_weights", "model_call_failed", "model_refused", "context_overflow", "invalid_structured_output", "timeout"],
    summary: "Decide a question by the votes of several agents or models against a consensus threshold",
    tags: ["decide"],
    body: DecideBody,
    responses: { 200: { description: "the decision, the consensus, each vote and the counts", schema: envelopeOf(DecideResult) } },
  });
  api.post("/decide", async (request, reply) => {
    const body = parseRequestPart(DecideBody, request.body);
    const controller = new AbortController();
    // The votes' model calls stop when the client goes away.
    const onClose = (): void => {
      if (!reply.raw.writableFinished) controller.abort();
    };
    reply.raw.once("close", onClose);
    try {
      const result = await troupe.decide(body, { signal: controller.signal });
      const choice = troupe.models.choice.critic;
      metrics.llmCalls.inc({ provider: choice.provider, model: choice.model, outcome: "ok" }, result.usage.llmCalls);
      metrics.llmTokens.inc({ kind: "prompt" }, result.usage.promptTokens);
      metrics.llmTokens.inc({ kind: "completion" }, result.usage.completionTokens);
      return ok(result);
    } finally {
      reply.raw.off("close", onClose);
    }
  });
}
