import picomatch from "picomatch";

/**
 * The config's `trust.trusted` and `trust.untrusted` globs (`notes/**`, `inbox/**`, `**\/*.eml`),
 * matched against workspace paths a model or a planted document may choose. picomatch compiles one whole pattern to a regular
 * expression that backtracks polynomially in the path's length for every extra wildcard (two
 * globstars and two stars take seconds on a 2 KB path), so a pattern is matched one path segment
 * at a time instead: picomatch for each segment (bounded wildcards, bounded length) and a
 * table over the segments for `**`, which costs segments × pattern segments. A path too long
 * or deep to match within the bounds counts as untrusted.
 */

export const PATH_PATTERN_LIMITS = {
  patterns: 64,
  patternChars: 256,
  /** `**` segments in one pattern. */
  globstars: 4,
  /** `*` and `?` in one segment of a pattern. */
  segmentWildcards: 3,
  /** Characters and segments of a path matched; longer or deeper paths are untrusted. */
  pathChars: 2_048,
  pathSegments: 64,
  segmentChars: 255,
} as const;

/** Why a pattern cannot be used, or undefined when it can. */
export function pathPatternProblem(pattern: string): string | undefined {
  const limits = PATH_PATTERN_LIMITS;
  if (pattern.trim() === "") return "a pattern is empty";
  if (pattern.length > limits.patternChars) return `a pattern is longer than ${limits.patternChars} characters`;
  if (/[\0\r\n]/.test(pattern)) return "a pattern has a control character";
  if (pattern.startsWith("/") || pattern.split("/").includes("..")) return `"${pattern}": patterns are relative to the workspace, without ..`;
  if (/[@!+*?]\(/.test(pattern)) return `"${pattern}": extended globs (…(…)) are not supported`;
  if (/\{[^}]*\/[^}]*\}/.test(pattern)) return `"${pattern}": a brace list may not hold a /`;
  const segments = pattern.split("/").filter((segment) => segment !== "");
  if (segments.filter((segment) => segment === "**").length > limits.globstars) return `"${pattern}": at most ${limits.globstars} ** in a pattern`;
  for (const segment of segments) {
    if (segment === "**") continue;
    if (segment.includes("**")) return `"${pattern}": ** must be a whole segment`;
    if ((segment.match(/[*?]/g) ?? []).length > limits.segmentWildcards) return `"${pattern}": at most ${limits.segmentWildcards} wildcards in one segment`;
  }
  return undefined;
}

type SegmentMatcher = "globstar" | ((segment: string) => boolean);

function compile(pattern: string, nocase: boolean): SegmentMatcher[] {
  return pattern
    .split("/")
    .filter((segment) => segment !== "" && segment !== ".")
    .map((segment) => (segment === "**" ? "globstar" : picomatch(segment, { dot: true, nocase })));
}

/**
 * Whether the path is at or below a path the pattern matches (a matched folder's contents are
 * untrusted too): a table of (pattern segment, path segment) pairs; `**` takes zero or more
 * segments.
 */
function matchSegments(pattern: SegmentMatcher[], path: readonly string[]): boolean {
  // reachable[j]: the pattern's first i segments can match the path's first j segments.
  let reachable = new Array<boolean>(path.length + 1).fill(false);
  reachable[0] = true;
  for (const matcher of pattern) {
    const next = new Array<boolean>(path.length + 1).fill(false);
    if (matcher === "globstar") {
      let any = false;
      for (let index = 0; index <= path.length; index += 1) {
        any ||= reachable[index] === true;
        next[index] = any;
      }
    } else {
      for (let index = 0; index < path.length; index += 1) {
        if (reachable[index] && matcher(path[index] as string)) next[index + 1] = true;
      }
    }
    reachable = next;
    if (!reachable.includes(true)) return false;
  }
  // The whole pattern matched the first j segments, for some j: the path is that path or inside it.
  return true;
}

/** The segments of a workspace path (`./`, `/workspace/` and `//` tolerated), or undefined when it is too long, too deep or leaves with `..`. */
function segmentsOf(path: string): string[] | undefined {
  const limits = PATH_PATTERN_LIMITS;
  if (path.length > limits.pathChars) return undefined;
  const segments = path
    .replace(/\\/g, "/")
    .replace(/^\/workspace(?=\/|$)/, "")
    .split("/")
    .filter((segment) => segment !== "" && segment !== ".");
  if (segments.length > limits.pathSegments || segments.some((segment) => segment.length > limits.segmentChars || segment === "..")) return undefined;
  return segments;
}

/**
 * Matches workspace-relative paths against a list of globs, as written or with case folded (for
 * a file system that folds case, where `Inbox/` is the folder `inbox/**` names).
 */
export class PathPatterns {
  readonly patterns: readonly string[];
  readonly #exact: SegmentMatcher[][];
  readonly #folded: SegmentMatcher[][];

  /** Throws an Error naming the first unusable pattern (the config check reports it first). */
  constructor(patterns: readonly string[] = []) {
    if (patterns.length > PATH_PATTERN_LIMITS.patterns) throw new Error(`at most ${PATH_PATTERN_LIMITS.patterns} patterns`);
    for (const pattern of patterns) {
      const problem = pathPatternProblem(pattern);
      if (problem) throw new Error(problem);
    }
    this.patterns = [...patterns];
    this.#exact = patterns.map((pattern) => compile(pattern, false));
    this.#folded = patterns.map((pattern) => compile(pattern, true));
  }

  get empty(): boolean {
    return this.patterns.length === 0;
  }

  /**
   * Whether the path is at or below a path a pattern matches; `undefined` when it is too long or
   * deep to match within the bounds (the caller decides what such a path is: never trusted).
   */
  matches(path: string, options: { foldCase?: boolean } = {}): boolean | undefined {
    const found = this.find(path, options);
    return found === undefined ? undefined : found !== null;
  }

  /** The first pattern the path is at or below; null when none; undefined when the path is too long or deep to match. */
  find(path: string, options: { foldCase?: boolean } = {}): string | null | undefined {
    const segments = segmentsOf(path);
    if (segments === undefined) return undefined;
    const compiled = options.foldCase ? this.#folded : this.#exact;
    const index = compiled.findIndex((pattern) => matchSegments(pattern, segments));
    return index < 0 ? null : (this.patterns[index] as string);
  }
}
