/**
 * The evidence index of a research answer (seed 002's `evidence_index`): each claim of the answer
 * mapped to the sources it rests on — the research subtasks whose outcomes it cites (`[s1]`) or
 * repeats (most of its words are in an outcome's summary), with the URLs, files and searches
 * those subtasks used. Built by code from the answer and the outcomes, deterministic, costing no
 * model call; a claim that rests on nothing found is listed as such, for a reader to check.
 */

/** A research subtask as evidence: what it found (its summary) and where it looked. */
export interface EvidenceSource {
  /** The subtask id, as the answer cites it: `[s1]`. */
  id: string;
  label: string;
  /** URLs fetched, workspace files read, searches made. */
  refs: string[];
}

export interface EvidenceClaim {
  id: string;
  text: string;
  /** The sources it rests on (subtask ids). */
  sources: string[];
  /** cited: the answer names the source; matched: its words are in the source's outcome; none: neither. */
  basis: "cited" | "matched" | "none";
}

export interface EvidenceIndex {
  claims: EvidenceClaim[];
  sources: EvidenceSource[];
}

/** Where the index starts when it is added to an answer (and where a reader of the answer cuts it off). */
export const EVIDENCE_HEADING = "**Evidence**";

const STOPWORDS = new Set(
  "about above after again against also because been before being below between both could does doing down during each from further have having here into itself just more most other over same should some such than that their theirs them then there these they this those through under until very what when where which while whom with would your".split(" "),
);

/** The words of a text that carry meaning: lower case, four letters or more, no stopwords. */
function contentWords(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'-]{3,}/gu) ?? []).filter((word) => !STOPWORDS.has(word)));
}

/** The answer's claims: its sentences and list items, without code blocks, headings, the index itself, or the lines in `notClaims`. */
export function claimsOf(answer: string, notClaims: readonly string[] = []): string[] {
  const body = answer.split(`\n\n${EVIDENCE_HEADING}`)[0] ?? answer;
  const prose = body.replace(/```[\s\S]*?```/g, " ");
  return prose
    .split(/\n+/)
    .filter((line) => !/^\s*#/.test(line))
    .flatMap((line) => line.replace(/^\s*([-*+]|\d+[.)])\s+/, "").split(/(?<=[.!?])\s+(?=[A-Z0-9"“(])/))
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length >= 12 && contentWords(sentence).size >= 2 && !notClaims.includes(sentence))
    .slice(0, 100);
}

/**
 * Builds the index of an answer over the outcomes it may rest on (each with its summary).
 * `notClaims`: sentences that say how the answer was made rather than what is so (the offline
 * model's notice), left out.
 */
export function evidenceIndex(answer: string, sources: ReadonlyArray<EvidenceSource & { text: string }>, options: { notClaims?: readonly string[] } = {}): EvidenceIndex {
  const known = new Map(sources.map((source) => [source.id, contentWords(`${source.label} ${source.text}`)]));
  const claims = claimsOf(answer, options.notClaims).map((text, index): EvidenceClaim => {
    const cited = [...text.matchAll(/\[([A-Za-z][\w.-]{0,63})\]/g)].map((match) => match[1] as string).filter((id) => known.has(id));
    if (cited.length > 0) return { id: `c${index + 1}`, text, sources: [...new Set(cited)], basis: "cited" };
    const words = contentWords(text);
    const matched = sources
      .filter((source) => {
        const overlap = [...words].filter((word) => known.get(source.id)?.has(word)).length;
        return overlap >= Math.max(2, Math.ceil(words.size / 2));
      })
      .map((source) => source.id);
    return { id: `c${index + 1}`, text, sources: matched, basis: matched.length > 0 ? "matched" : "none" };
  });
  return { claims, sources: sources.map(({ id, label, refs }) => ({ id, label, refs })) };
}

/** The index as a section at the end of the answer. */
export function evidenceSection(index: EvidenceIndex): string {
  if (index.claims.length === 0) return "";
  const byId = new Map(index.sources.map((source) => [source.id, source]));
  const lines = index.claims.map((claim) => {
    const where = claim.sources.map((id) => {
      const source = byId.get(id);
      return `${id}${source && source.refs.length > 0 ? ` (${source.refs.slice(0, 3).join(", ")})` : ""}`;
    });
    const text = claim.text.length > 160 ? `${claim.text.slice(0, 159)}…` : claim.text;
    return `- ${claim.id} “${text}” ← ${where.length > 0 ? where.join("; ") : "no source found: check it"}`;
  });
  return `${EVIDENCE_HEADING}\n\n${lines.join("\n")}`;
}

/** Where a subtask's tool call looked, from its arguments: a URL, a file, a search, a calculation. */
export function refOf(tool: string, args: string): string | undefined {
  const field = (name: string): string | undefined => {
    try {
      const value = (JSON.parse(args) as Record<string, unknown>)[name];
      return typeof value === "string" ? value : undefined;
    } catch {
      // A preview cut short: the field may still be readable.
      return new RegExp(`"${name}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(args)?.[1];
    }
  };
  const url = field("url");
  if (url) return url;
  const path = field("path");
  if (path && tool.startsWith("file_")) return `file ${path}`;
  const query = field("query");
  if (query) return `search "${query}"`;
  const expression = field("expression");
  if (expression) return `${tool} ${expression}`;
  return undefined;
}
