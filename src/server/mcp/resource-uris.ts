import { McpError } from "@modelcontextprotocol/sdk/types.js";

/** MCP's code for a resource that does not exist (the spec's "Resource not found"). */
export const RESOURCE_NOT_FOUND = -32002;

/** Run ids, thread ids and agent names are short: a longer URI part is no resource of troupe's. */
const MAX_ID = 200;

/** A run's resources: `troupe://runs/{id}` and `troupe://runs/{id}/graph`. */
const RUN_URI = /^troupe:\/\/runs\/([^/?#]{1,600})(\/graph)?$/;

/** A URI part as written in a URI (percent-encoded); undefined when it is not valid encoding or too long. */
export function decodePart(part: string): string | undefined {
  try {
    const decoded = decodeURIComponent(part);
    return decoded.length > 0 && decoded.length <= MAX_ID ? decoded : undefined;
  } catch {
    return undefined;
  }
}

/** The run a run resource's URI names; undefined for any other URI. */
export function runIdOfUri(uri: string): string | undefined {
  if (uri.length > 700) return undefined;
  const match = RUN_URI.exec(uri);
  return match ? decodePart(match[1] as string) : undefined;
}

/** The -32002 error for a URI, its message bounded (a URI may be long). */
export function resourceNotFound(uri: string, why: string): McpError {
  const shown = uri.length > 200 ? `${uri.slice(0, 200)}…` : uri;
  return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${shown}: ${why}`, { uri: shown });
}
