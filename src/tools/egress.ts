import { type Designation, designates, insideNamedFolder, normalisePath, type TargetKind } from "../core/designation.js";
import { type CallProvenance, describeSources, joinLabels, type Label, privateSources, type Source, TRUSTED } from "../core/provenance.js";
import { preview } from "../core/text.js";
import { type Destination, describeDestination, type EgressRules } from "./egress-rules.js";

/**
 * Nothing leaves without the task's word (CaMeL's readers, for confidentiality). A call that
 * sends data out of the machine — an HTTP request's URL, headers and body, an MCP tool's
 * arguments, a message to a remote agent — may carry data read from the workspace, memory or
 * another tool only to a destination the config names (`trust.egress`), or to one the task names
 * when the task also names every source of that data. Anything else waits for a person, who is
 * told what would be sent, where, and from which sources. Data the task gave word for word, and
 * public web content, carry nothing private.
 */

/** Where a call sends data, and which of its arguments go (with how each is matched against the instructions). */
export interface EgressSpec {
  destination: Destination;
  /** The argument that names the destination, when one does (an HTTP request's URL). */
  destinationArgument?: string;
  payload: Readonly<Record<string, TargetKind>>;
  /** A URL argument that, appearing verbatim in public web content the caller read, sends nothing new (following a link). */
  link?: string;
}

/** A call that would send private data where nobody named. */
export interface Egress {
  tool: string;
  destination: Destination;
  /** Whether the task (or the plan) names the destination; the config does not, or there would be no finding. */
  destinationNamed: boolean;
  /** The arguments that would carry it, each with a short preview of what it holds. */
  sends: Array<{ argument: string; preview: string }>;
  /** The private sources whose data may be in them, and whether more may be than are listed. */
  sources: Source[];
  more: boolean;
  /** One line for the person asked. */
  summary: string;
}

const PATH_CHAR = /[\p{L}\p{N}_\-./~]/u;

function mentions(texts: readonly string[], needle: string, caseless: boolean): boolean {
  if (needle === "") return false;
  const wanted = caseless ? needle.toLowerCase() : needle;
  return texts.some((raw) => {
    const text = caseless ? raw.toLowerCase() : raw;
    for (let from = text.indexOf(wanted); from >= 0; from = text.indexOf(wanted, from + 1)) {
      const before = text[from - 1];
      const after = text[from + wanted.length];
      const afterNext = text[from + wanted.length + 1];
      const sentenceEnd = after !== undefined && ".,?!:;".includes(after) && (afterNext === undefined || /\s|["'`)\]]/.test(afterNext));
      if ((before === undefined || !PATH_CHAR.test(before)) && (after === undefined || sentenceEnd || !PATH_CHAR.test(after))) return true;
    }
    return false;
  });
}

/**
 * Whether the trusted instructions name a private source: a workspace file by its path (or a
 * folder it is in, of three characters or more), a fact, MCP server or remote agent by name.
 */
export function namesSource(designation: Designation | undefined, source: Source): boolean {
  if (!designation) return false;
  switch (source.kind) {
    case "workspace": {
      const path = normalisePath(source.name);
      if (path === "" || /\s/.test(source.name)) return false;
      return designation.paths.has(path) || mentions(designation.texts, path, false) || insideNamedFolder(designation, path);
    }
    case "memory":
    case "remote-agent":
      return designates(designation, "name", source.name);
    case "mcp": {
      const [server, tool] = source.name.split(".", 2);
      return [source.name, server ?? "", tool ?? ""].some((name) => name !== "" && designates(designation, "name", name));
    }
    default:
      return false;
  }
}

/** Whether the instructions name the destination: its URL given, or the server, the agent or the tool named, or the plan's own call. */
function destinationNamed(spec: EgressSpec, tool: string, args: Record<string, unknown>, provenance: CallProvenance): boolean {
  if (provenance.planned) {
    // A direct step's or a remote agent's subtask: the plan chose the tool; a destination argument must be the plan's too.
    if (!spec.destinationArgument) return true;
    const reference = provenance.references[spec.destinationArgument];
    return reference ? reference.trust === "trusted" : provenance.literals?.includes(spec.destinationArgument) === true;
  }
  const designation = provenance.designation;
  if (!designation) return false;
  if (spec.destinationArgument) return designates(designation, "url", args[spec.destinationArgument]);
  if (designation.tools?.includes(tool)) return true;
  return designates(designation, "name", spec.destination.name) || designates(designation, "name", tool);
}

/** The label of what one argument may carry: nothing when the instructions gave it word for word (or it is a link read on the web). */
function carried(argument: string, kind: TargetKind, value: unknown, spec: EgressSpec, provenance: CallProvenance): Label {
  const reference = provenance.references[argument];
  if (reference) return reference;
  if (provenance.literals?.includes(argument)) return TRUSTED;
  if (provenance.designation && designates(provenance.designation, kind, value)) return TRUSTED;
  // A number the task gives ("ticket 7") carries nothing the model read.
  if (provenance.designation && typeof value === "number" && mentions(provenance.designation.texts, String(value), false)) return TRUSTED;
  if (spec.link === argument && typeof value === "string" && provenance.links?.has(value)) return TRUSTED;
  return provenance.context;
}

/** The egress finding of a call, or null when it sends nothing private where nobody named. */
export function egressOf(tool: string, spec: EgressSpec | null, args: Record<string, unknown>, provenance: CallProvenance | undefined, rules: EgressRules): Egress | null {
  if (!spec || !provenance) return null;
  const sends: Egress["sends"] = [];
  let label: Label = TRUSTED;
  for (const [argument, kind] of Object.entries(spec.payload)) {
    const value = args[argument];
    if (value === undefined || value === null || value === "") continue;
    const own = carried(argument, kind, value, spec, provenance);
    if (privateSources(own).sources.length === 0 && !privateSources(own).unknown) continue;
    label = joinLabels(label, own);
    sends.push({ argument, preview: preview(value, 160) });
  }
  const { sources, unknown } = privateSources(label);
  if (sends.length === 0 || (sources.length === 0 && !unknown)) return null;
  if (rules.names(spec.destination)) return null;
  const named = destinationNamed(spec, tool, args, provenance);
  const unnamed = sources.filter((source) => !namesSource(provenance.designation, source));
  if (named && unnamed.length === 0 && !unknown) return null;
  const where = describeDestination(spec.destination);
  const from = describeSources({ trust: "untrusted", sources: unnamed.length > 0 ? unnamed : sources, ...(unknown ? { more: 1 } : {}) });
  const what = sends.map((send) => send.argument).join(", ");
  const why = named ? "the task names the destination but not where the data came from" : "neither the task nor trust.egress names the destination";
  return {
    tool,
    destination: spec.destination,
    destinationNamed: named,
    sends,
    sources: unnamed.length > 0 ? unnamed : sources,
    more: unknown,
    summary: `${tool} would send data read from ${from} to ${where} (in its ${what}): ${why}`,
  };
}
