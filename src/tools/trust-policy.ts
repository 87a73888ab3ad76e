import type { TrustConfig, TrustMode } from "./trust-config.js";
import { designates, insideNamedFolder, type TargetKind } from "../core/designation.js";
import type { FileLabelStore } from "../core/file-labels.js";
import { type CallProvenance, describeSources, isUntrusted, joinLabels, type Label, TRUSTED, untrustedLabel } from "../core/provenance.js";
import type { ToolDefinition } from "./define-tool.js";
import { type Egress, egressOf } from "./egress.js";
import { EgressRules } from "./egress-rules.js";
import { FileTrust } from "./file-trust.js";
import { WorkspaceTrust } from "./workspace-trust.js";
import type { OriginLens, SteeredHow, Steering } from "./trust-types.js";

/**
 * The trust policy: untrusted data never steers an effect. Before a side-effecting call runs,
 * each of its target arguments (a path, a URL, code, a subject) must have come from a trusted
 * source: written in the plan, passed by reference from a trusted value, or — when the calling
 * model had read untrusted content — named by the trusted instructions (`Designation`). A call
 * that fails this is *steered*: under `ask` it waits for a person, under `deny` it is refused,
 * under `allow` it runs. Content arguments (what is written, what is sent) may carry untrusted
 * data. After every call the policy labels its outcome: its inputs' labels joined with the
 * tool's own untrusted sources. The registry calls both in one place each; see docs/trust.md.
 */

export type { OriginLens, SteeredHow, Steering, SteeringSpec } from "./trust-types.js";

const HOW_TEXT: Record<SteeredHow, string> = {
  reference: "came by reference from untrusted data",
  context: "was chosen by a model that had read untrusted content, and the task and plan do not name it",
  operation: "is not among the tools the plan gave this subtask, and was chosen by a model that had read untrusted content",
};

/** Whether a label's every source is the public web (a page, search results): what anyone could read. */
function isPublicWeb(label: Label): boolean {
  return isUntrusted(label) && label.sources.length > 0 && !label.more && label.sources.every((source) => source.kind === "web" || source.kind === "search");
}

export class TrustPolicy implements OriginLens {
  readonly mode: TrustMode;
  readonly paths: WorkspaceTrust;
  /** How workspace files are labelled: by what they hold (src/tools/file-trust.ts). */
  readonly files: FileTrust;
  readonly egressRules: EgressRules;

  /** Throws an Error naming the first unusable pattern or destination (the config check reports it first). */
  constructor(config: Partial<TrustConfig> = {}, options: { fileLabels?: FileLabelStore } = {}) {
    this.mode = config.policy ?? "ask";
    this.paths = new WorkspaceTrust(config);
    this.files = new FileTrust(this.paths, options.fileLabels);
    this.egressRules = new EgressRules(config.egress ?? []);
  }

  untrustedPath(path: string): boolean {
    return !this.paths.verdict(path).trusted;
  }

  get hasUntrustedPaths(): boolean {
    return !this.paths.allTrusted;
  }

  /** Whether a call of this tool could wait for a person under this policy (it has an effect or sends data out, and the policy asks). */
  mayAsk(tool: Pick<ToolDefinition, "targets" | "sends"> | undefined): boolean {
    return this.mode === "ask" && (tool?.targets !== undefined || tool?.sends !== undefined);
  }

  /** Whether a call would send private data where nobody named (src/tools/egress.ts); null when not, or for a trusted caller. */
  egress(tool: Pick<ToolDefinition, "name" | "sends">, args: Record<string, unknown>, provenance: CallProvenance | undefined): Egress | null {
    if (!provenance || !tool.sends) return null;
    return egressOf(tool.name, tool.sends(args), args, provenance, this.egressRules);
  }

  /** The steering of a call, or null when nothing untrusted chose any of its targets (or it has no effect, or no provenance: a trusted caller). */
  steering(tool: Pick<ToolDefinition, "name" | "targets">, args: Record<string, unknown>, provenance: CallProvenance | undefined): Steering | null {
    if (!provenance || !tool.targets) return null;
    const spec = tool.targets(args);
    if (!spec) return null;
    const targets: Steering["targets"] = [];
    let sources = TRUSTED;
    const tainted = isUntrusted(provenance.context);
    for (const [argument, kind] of Object.entries(spec.targets)) {
      const value = args[argument];
      if (value === undefined || value === null) continue;
      const reference = provenance.references[argument];
      if (reference) {
        // A URL taken by reference from public web content is a link on it: fetching it sends nothing new out.
        if (spec.link === argument && isPublicWeb(reference)) continue;
        // The plan's own step over the entries of a folder the task names ("run each file in scripts/"): the plan chose the folder and the operation.
        if (kind === "path" && provenance.planned && provenance.designation && typeof value === "string" && insideNamedFolder(provenance.designation, value)) continue;
        if (isUntrusted(reference)) {
          targets.push({ argument, how: "reference" });
          sources = joinLabels(sources, reference);
        }
        continue;
      }
      if (!tainted || provenance.literals?.includes(argument)) continue;
      if (provenance.designation && designates(provenance.designation, kind, value)) continue;
      if (spec.link === argument && typeof value === "string" && provenance.links?.has(value)) continue;
      targets.push({ argument, how: "context" });
      sources = joinLabels(sources, provenance.context);
    }
    const allotted = provenance.designation?.tools;
    if (tainted && allotted && !allotted.includes(tool.name)) {
      targets.push({ argument: "(tool)", how: "operation" });
      sources = joinLabels(sources, provenance.context);
    }
    if (targets.length === 0 || !isUntrusted(sources)) return null;
    const parts = targets.map((target) => (target.argument === "(tool)" ? `the call itself ${HOW_TEXT.operation}` : `its ${target.argument} ${HOW_TEXT[target.how]}`));
    return { tool: tool.name, targets, sources: sources.sources, summary: `${tool.name} was steered by untrusted data from ${describeSources(sources)}: ${parts.join("; ")}` };
  }

  /** The label of a call's outcome: its inputs (what the caller had read, what it passed by reference) and the tool's own untrusted sources. */
  labelOf(tool: Pick<ToolDefinition, "origin">, args: Record<string, unknown>, value: unknown, provenance: CallProvenance | undefined): Label {
    const inputs = inputsLabel(provenance);
    const origin = tool.origin?.(args, value, this) ?? [];
    return origin.length === 0 ? inputs : joinLabels(inputs, untrustedLabel(origin));
  }
}

/** The label of everything a call was made from: what its caller had read, and what it passed by reference (trusted for a trusted caller). */
export function inputsLabel(provenance: CallProvenance | undefined): Label {
  return provenance ? joinLabels(provenance.context, ...Object.values(provenance.references)) : TRUSTED;
}

/**
 * The label of what a call's content argument carries: the referenced value's, when it came by
 * reference; trusted when the plan wrote it, when the caller had read nothing untrusted, or when
 * the instructions give it as it is; otherwise the caller's context — a model that had read
 * untrusted content wrote it. A fact saved or a message posted keeps this label.
 */
export function argumentLabel(argument: string, value: unknown, provenance: CallProvenance | undefined, kind: TargetKind = "name"): Label {
  if (!provenance) return TRUSTED;
  const reference = provenance.references[argument];
  if (reference) return reference;
  if (provenance.literals?.includes(argument) || !isUntrusted(provenance.context)) return TRUSTED;
  if (provenance.designation && designates(provenance.designation, kind, value)) return TRUSTED;
  return provenance.context;
}
