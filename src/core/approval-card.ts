import { truncate } from "./text.js";

/**
 * What a person deciding on a tool call is told, in the same words wherever they decide (the
 * CLI, the console, an MCP host's elicitation, an A2A client's input-required message): what the
 * call would make troupe do, and — when the trust policy asked — the untrusted source that chose
 * it, or the data that would leave, where it would go and where it came from (docs/trust.md).
 * Read from the approval request's payload, which may come from an older troupe or another
 * peer: anything missing or malformed is left out, never guessed.
 */

interface SourceLike {
  kind?: unknown;
  name?: unknown;
}

function sourcesText(sources: unknown, more = false): string {
  const list = Array.isArray(sources) ? (sources as SourceLike[]).filter((source) => typeof source?.kind === "string" && typeof source.name === "string") : [];
  const shown = list.slice(0, 8).map((source) => `${String(source.kind)} ${truncate(String(source.name), 200)}`);
  return `${shown.join(", ")}${more || list.length > 8 ? " (and more)" : ""}`;
}

const record = (value: unknown): Record<string, unknown> | undefined => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined);

/** The lines of a tool approval's card: the action first, then why the trust policy asks (empty reasons left out). */
export function approvalCard(payload: Record<string, unknown>): string[] {
  const tool = typeof payload.tool === "string" ? payload.tool : "a tool";
  const action = typeof payload.action === "string" && payload.action !== "" ? truncate(payload.action, 500) : `call ${tool}`;
  const lines = [`It would ${action}.`];
  const steering = record(payload.steering);
  if (steering) {
    const targets = Array.isArray(steering.targets) ? (steering.targets as Array<{ argument?: unknown }>).map((target) => (target.argument === "(tool)" ? "the call itself" : `its ${String(target.argument)}`)) : [];
    lines.push(`Untrusted data from ${sourcesText(steering.sources)} chose ${targets.length > 0 ? targets.join(" and ") : "it"}: the task and the plan do not name ${targets.length > 1 ? "them" : "it"}.`);
  }
  const egress = record(payload.egress);
  if (egress) {
    const destination = record(egress.destination);
    const where = destination ? (destination.kind === "url" ? String(destination.name) : `the ${destination.kind === "mcp" ? "MCP server" : "remote agent"} ${String(destination.name)}`) : "another system";
    const sends = Array.isArray(egress.sends) ? (egress.sends as Array<{ argument?: unknown; preview?: unknown }>).map((send) => `${String(send.argument)}: ${truncate(String(send.preview ?? ""), 160)}`) : [];
    lines.push(
      `It would send data read from ${sourcesText(egress.sources, egress.more === true)} out of this machine, to ${where}${egress.destinationNamed === true ? " (a destination the task names, but the task does not name that data)" : " (neither the task nor trust.egress names it)"}.`,
    );
    if (sends.length > 0) lines.push(`What would be sent — ${sends.join("; ")}`);
  }
  return lines;
}
