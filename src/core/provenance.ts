import { z } from "zod";
import type { Designation } from "./designation-types.js";
import { truncate } from "./text.js";

/**
 * Provenance: where a value came from. Every tool result, stash value, map item, worker outcome
 * and memory fact carries a label — trusted (the user's task and the plan's literals, the user's
 * own workspace files by default, a person's approvals and answers) or untrusted, with the
 * sources that made it so. Labels only ever join: a value made from an untrusted one, or by a
 * model that had read untrusted content, is untrusted. See docs/trust.md.
 */

/**
 * Kinds of untrusted source. Code that brings data in from outside marks it with one of these
 * (`remote-agent` for an A2A peer's result). `model` marks what a model wrote after reading
 * untrusted data: no longer the source's own words, so it may hold anything else it had read.
 */
export const SOURCE_KINDS = ["web", "search", "mcp", "remote-agent", "workspace", "memory", "board", "reviewer", "model", "unknown"] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

export const PROVENANCE_LIMITS = {
  /** Sources a label lists; more are counted. */
  sources: 8,
  /** Characters of a source's name (a URL, a path, a server). */
  nameChars: 200,
  /** Characters of a stored label's JSON: a longer one is not read (it counts as unreadable, so untrusted). */
  storedChars: 8_192,
} as const;

export const Source = z.object({ kind: z.enum(SOURCE_KINDS), name: z.string().max(PROVENANCE_LIMITS.nameChars) }).strict();
export type Source = z.infer<typeof Source>;

/**
 * Confidentiality, beside integrity (CaMeL's readers): the private sources whose data a value may
 * hold although it is trusted — a workspace file the config trusts, a fact a person saved, a
 * trusted MCP server's result. An untrusted value's private sources are among its `sources`
 * (see `privateSources`). The egress check (src/tools/egress.ts) reads them: such data leaves the
 * machine only for a destination the task or the config names, or after a person approves.
 */
const held = {
  held: z.array(Source).max(PROVENANCE_LIMITS.sources).optional(),
  /** Private sources beyond those listed in `held`. */
  heldMore: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
};

export const Label = z.discriminatedUnion("trust", [
  z.object({ trust: z.literal("trusted"), ...held }).strict(),
  z
    .object({
      trust: z.literal("untrusted"),
      sources: z.array(Source).max(PROVENANCE_LIMITS.sources),
      /** Sources beyond those listed. */
      more: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
      ...held,
    })
    .strict(),
]);
export type Label = z.infer<typeof Label>;
export type UntrustedLabel = Extract<Label, { trust: "untrusted" }>;

export const TRUSTED: Label = Object.freeze({ trust: "trusted" }) as Label;

/** A source with its name made printable and bounded: names come from URLs and paths an attacker may choose. */
export function sourceOf(kind: SourceKind, name: string): Source {
  // Control characters (and the bidirectional overrides) could forge lines in a console or an approval.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const clean = name.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, " ").trim();
  return { kind, name: truncate(clean, PROVENANCE_LIMITS.nameChars) };
}

export function isUntrusted(label: Label | undefined): label is UntrustedLabel {
  return label?.trust === "untrusted";
}

/** A label naming these sources (trusted when there are none). */
export function untrustedLabel(sources: readonly Source[]): Label {
  if (sources.length === 0) return TRUSTED;
  return joinLabels({ trust: "untrusted", sources: [] }, ...sources.map((source): Label => ({ trust: "untrusted", sources: [source] })));
}

/** Adds sources to a bounded list, each once; returns how many did not fit. */
function addSources(into: Source[], sources: readonly Source[]): number {
  let over = 0;
  for (const source of sources) {
    if (into.some((known) => known.kind === source.kind && known.name === source.name)) continue;
    if (into.length < PROVENANCE_LIMITS.sources) into.push(source);
    else over += 1;
  }
  return over;
}

/** The label of a value made from these: untrusted when any is, with their sources (bounded, each once), and every private source any holds. */
export function joinLabels(...labels: ReadonlyArray<Label | undefined>): Label {
  let sources: Source[] | undefined;
  let more = 0;
  const kept: Source[] = [];
  let heldMore = 0;
  for (const label of labels) {
    if (!label) continue;
    if (label.held) heldMore += addSources(kept, label.held);
    heldMore += label.heldMore ?? 0;
    if (!isUntrusted(label)) continue;
    sources ??= [];
    more += label.more ?? 0;
    more += addSources(sources, label.sources);
  }
  const holding = { ...(kept.length > 0 ? { held: kept } : {}), ...(heldMore > 0 ? { heldMore } : {}) };
  if (!sources) return kept.length > 0 || heldMore > 0 ? { trust: "trusted", ...holding } : TRUSTED;
  return { trust: "untrusted", sources, ...(more > 0 ? { more } : {}), ...holding };
}

/** A label that says a value holds these private sources' data (trusted: their integrity is not in question). */
export function heldLabel(sources: readonly Source[]): Label {
  if (sources.length === 0) return TRUSTED;
  const held: Source[] = [];
  const heldMore = addSources(held, sources);
  return heldMore > 0 ? { trust: "trusted", held, heldMore } : { trust: "trusted", held };
}

/**
 * Kinds of source whose data is private: what the workspace, memory, another tool or a remote
 * agent returned, and whatever cannot be told (an unreadable label, the critic's notes on
 * results it read). The public web and search results are not: anyone can read them, and `model`
 * and `board` only say who wrote a value, whose own sources are joined beside.
 */
const PRIVATE_KINDS: ReadonlySet<SourceKind> = new Set(["workspace", "memory", "mcp", "remote-agent", "unknown", "reviewer"]);

/** Whether a source's data is private (see PRIVATE_KINDS). */
export function isPrivateSource(source: Source): boolean {
  return PRIVATE_KINDS.has(source.kind);
}

/**
 * The private sources whose data a value may hold — its untrusted sources of a private kind and
 * the trusted ones it holds — and whether more may be behind the bound (`unknown`: sources that
 * were counted, not listed, could be any).
 */
export function privateSources(label: Label | undefined): { sources: Source[]; unknown: boolean } {
  if (!label) return { sources: [], unknown: false };
  const sources: Source[] = [];
  for (const source of [...(isUntrusted(label) ? label.sources.filter(isPrivateSource) : []), ...(label.held ?? [])]) {
    if (!sources.some((known) => known.kind === source.kind && known.name === source.name)) sources.push(source);
  }
  return { sources, unknown: (label.heldMore ?? 0) > 0 || (isUntrusted(label) && (label.more ?? 0) > 0) };
}

/** The label of a value whose stored label could not be read: untrusted, saying so. */
export const UNREADABLE_LABEL: Label = Object.freeze({ trust: "untrusted", sources: [{ kind: "unknown", name: "a label that could not be read" }] }) as Label;

/**
 * A label as stored (JSON text, or a value already parsed). Anything malformed or oversized is
 * untrusted — a label never makes a value more trusted than its reader can prove.
 */
export function readLabel(stored: unknown): Label {
  let value = stored;
  if (typeof stored === "string") {
    if (stored.length > PROVENANCE_LIMITS.storedChars) return UNREADABLE_LABEL;
    try {
      value = JSON.parse(stored) as unknown;
    } catch {
      return UNREADABLE_LABEL;
    }
  }
  const parsed = Label.safeParse(value);
  return parsed.success ? parsed.data : UNREADABLE_LABEL;
}

/** A label as stored: JSON text. */
export function writeLabel(label: Label): string {
  return JSON.stringify(label);
}

/** One line a person reads: `web https://…, workspace inbox/a.txt (+2 more)`; empty for a trusted label. */
export function describeSources(label: Label | undefined): string {
  if (!isUntrusted(label)) return "";
  const names = label.sources.map((source) => `${source.kind} ${source.name}`);
  return `${names.join(", ")}${label.more ? ` (+${label.more} more)` : ""}`;
}

/** `untrusted (web https://…)` or `trusted`. */
export function describeLabel(label: Label | undefined): string {
  return isUntrusted(label) ? `untrusted (${describeSources(label)})` : "trusted";
}

/**
 * What the trust policy knows about one tool call: what the calling model had read, and how
 * each argument reached the call. A call without it comes from a trusted caller (a person, a
 * script): nothing can have steered it.
 */
export interface CallProvenance {
  /** Everything the caller's model had read when it chose the call; trusted for a step with no model (a direct tool step). */
  context: Label;
  /** Arguments that came by reference — a plan's `{ ref }`, a worker's `{"$stash": …}` handle — with the label of what they refer to. */
  references: Readonly<Record<string, Label>>;
  /** Arguments written in the plan itself (a direct step's literals). */
  literals?: readonly string[];
  /** The call is the plan's own (a direct step, a remote agent's subtask): the plan chose the tool, and its literal arguments. */
  planned?: boolean;
  /** What the trusted instructions name for this subtask: a target matching it was not chosen by untrusted data. */
  designation?: Designation;
  /** Whether a URL appeared verbatim in public web content the caller read: fetching one is following a link, not sending data out. */
  links?: { has(url: string): boolean };
}

/**
 * A value a tool returns together with the label of where it came from, when that is known from
 * troupe's own records rather than from the arguments (an earlier turn's stashed result, a
 * remembered fact, a board message). The registry unwraps it. Only code can make one: a tool's
 * JSON output (an MCP server's, a web page's) can never pass for it, so a label written inside
 * a value is just data.
 */
export class LabelledValue {
  constructor(
    readonly value: unknown,
    readonly label: Label,
  ) {}
}

/** The critic's notes when it had read untrusted results: model text shaped by that data. */
export const REVIEWER_NOTES: Label = untrustedLabel([sourceOf("reviewer", "the critic's notes, written after it read untrusted results")]);
