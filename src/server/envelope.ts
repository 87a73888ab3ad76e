import { z } from "zod";
import type { ErrorCode } from "../core/error-codes.js";

/** Every JSON answer under /api/v1: `{ code, message, data }`; `code` is "ok" or a stable error code. */
export interface Envelope<T> {
  code: "ok" | ErrorCode;
  message: string;
  data: T;
}

export function ok<T>(data: T, message = "ok"): Envelope<T> {
  return { code: "ok", message, data };
}

/** The envelope around a data schema, for the OpenAPI document. */
export function envelopeOf<T extends z.ZodType>(data: T) {
  return z.object({
    code: z.literal("ok"),
    message: z.string(),
    data,
  });
}

/** What every error answer looks like. */
export const ErrorEnvelope = z.object({
  code: z.string().describe("a stable error code, e.g. task_too_long, unauthorized, rate_limited"),
  message: z.string().describe("what went wrong, in a sentence"),
  data: z.record(z.string(), z.unknown()).nullable().describe("details: the field, the limit, the issues"),
});
