import type { TroupeConfig } from "../config/config-file.js";
import { errorMessage, InputError } from "../core/errors.js";
import type { RunRequest } from "../core/run.js";
import { type ModelSet, routeFor } from "../providers/registry.js";
import { checkOutputSchema } from "../tools/json-schema.js";
import { checkWebhook } from "./webhook-sender.js";

/**
 * Refuses a run request an instance could never run, from what is known before anything is
 * opened — its config and models: a webhook without a secret to sign with or on a host the rules
 * refuse, an output schema that is not a JSON Schema (or has a pattern RE2 cannot run), or a typed answer asked of models that
 * write none. The CLI calls it before the store exists (bad input writes nothing), and every run
 * and queued task goes through it again when it is accepted.
 */
export function checkRunRequest(request: Pick<RunRequest, "webhook" | "outputSchema">, parts: { config: TroupeConfig; models: ModelSet }): void {
  if (request.webhook) {
    try {
      checkWebhook(request.webhook.url, parts.config.webhooks);
    } catch (error) {
      const code = (error as { code?: string }).code;
      throw new InputError(code === "webhook_secret_missing" ? code : "webhook_refused", `webhook: ${errorMessage(error)}`, { url: request.webhook.url });
    }
  }
  if (request.outputSchema) {
    // The check every path shares: a JSON Schema object, bounded, whose patterns RE2 can run.
    checkOutputSchema(request.outputSchema);
    // The answer is written by the synthesizer's model, or by a fallback of it when it fails.
    const writers = routeFor(parts.models, "synthesizer").candidates;
    if (writers.every((candidate) => candidate.typedAnswers === false)) {
      const names = [...new Set(writers.map((candidate) => `${candidate.choice.provider}:${candidate.choice.model}`))].join(", ");
      throw new InputError(
        "typed_answer_unsupported",
        `an output schema needs a model that writes typed answers (JSON), and ${names} writes none (the offline model answers by rules, in text): set a provider (TROUPE_PROVIDER or --provider) for a typed answer`,
        { models: names },
      );
    }
  }
}
