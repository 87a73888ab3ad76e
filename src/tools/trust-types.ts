import type { TargetKind } from "../core/designation-types.js";
import type { Source } from "../core/provenance.js";

/**
 * The trust policy's shapes that tools declare and the registry reads (a tool's steering spec and
 * origin lens, a steered call), apart from the policy itself so that defining a tool does not
 * import the policy (src/tools/trust-policy.ts).
 */

/** Which arguments of a call choose what its effect acts on. */
export interface SteeringSpec {
  targets: Readonly<Record<string, TargetKind>>;
  /** A URL argument a read takes: fetching a link that appeared verbatim in web content sends nothing out, so it is not steered. */
  link?: string;
}

/** What a tool's `origin` may ask of the policy. */
export interface OriginLens {
  /** Whether a workspace path is untrusted by its path alone (every path but those `trust.trusted` names). */
  untrustedPath(path: string): boolean;
  /** Whether any workspace path is untrusted by its path (a script that reads the workspace may read one). */
  readonly hasUntrustedPaths: boolean;
}

/** How an argument of a steered call came to be what it is. */
export type SteeredHow = "reference" | "context" | "operation";

/** A steered call: which arguments untrusted data chose, and the sources behind them. */
export interface Steering {
  tool: string;
  targets: Array<{ argument: string; how: SteeredHow }>;
  sources: Source[];
  /** One line for the person asked. */
  summary: string;
}
