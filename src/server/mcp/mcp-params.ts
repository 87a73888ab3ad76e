import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/**
 * A request of `method` with any params: the handler checks them itself with {@link paramsOf}, so
 * bad params are JSON-RPC's -32602 with what is wrong (the SDK's own check of a handler's schema
 * answers -32603, an internal error, for the client's mistake).
 */
export function anyParams<Method extends string>(method: Method) {
  return z.object({ method: z.literal(method), params: z.unknown().optional() });
}

/** The params as `schema` reads them, or -32602 naming the first problem. */
export function paramsOf<T>(schema: { safeParse: (value: unknown) => { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } }, params: unknown, method: string): T {
  const parsed = schema.safeParse(params ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : "";
  throw new McpError(ErrorCode.InvalidParams, `${method}: ${where}${issue?.message ?? "invalid params"}`);
}
