import { PathPatterns } from "./path-patterns.js";

/**
 * What a workspace path alone says of a file: untrusted by default — a planted document can be
 * any file — trusted where the config's `trust.trusted` names it, and untrusted again where
 * `trust.untrusted` does. The untrusted globs match with case folded always (a folder named
 * `Inbox/` is not let through by a different spelling of `inbox/**`); the trusted ones with case
 * folded only where the file system folds case (where `NOTES/` is the folder `notes/**` names).
 * A file's label also follows its data (src/tools/file-trust.ts): this is only the path's part.
 */
export interface PathVerdict {
  trusted: boolean;
  /** Why, in words: the pattern that decided, or the default. */
  why: string;
  /** Whether the config (or a path beyond the bounds) made it untrusted, rather than the default: nothing troupe recorded makes such a file trusted. */
  explicit: boolean;
}

export class WorkspaceTrust {
  readonly trusted: PathPatterns;
  readonly untrusted: PathPatterns;

  /** Throws an Error naming the first unusable pattern. */
  constructor(config: { trusted?: readonly string[]; untrusted?: readonly string[] } = {}) {
    this.trusted = new PathPatterns(config.trusted ?? []);
    this.untrusted = new PathPatterns(config.untrusted ?? []);
  }

  /** Whether every workspace path is trusted by its path (`trust.trusted: ["**"]` and no untrusted pattern). */
  get allTrusted(): boolean {
    return this.untrusted.empty && this.trusted.patterns.some((pattern) => pattern.replace(/^(\.\/)+/, "").replace(/\/+$/, "") === "**");
  }

  /** The verdict on a workspace-relative path; `foldCase` when the file system folds case where it lies. */
  verdict(path: string, options: { foldCase?: boolean } = {}): PathVerdict {
    const untrusted = this.untrusted.find(path, { foldCase: true });
    if (untrusted === undefined) return { trusted: false, explicit: true, why: "its path is too long or too deep to judge" };
    if (untrusted !== null) return { trusted: false, explicit: true, why: `it is under trust.untrusted ("${untrusted}")` };
    const trusted = this.trusted.find(path, { foldCase: options.foldCase === true });
    if (trusted) return { trusted: true, explicit: false, why: `it is under trust.trusted ("${trusted}")${options.foldCase ? ", on a file system that folds case" : ""}` };
    return { trusted: false, explicit: false, why: "every workspace file is untrusted unless trust.trusted names it" };
  }
}
