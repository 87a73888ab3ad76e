import { type Source, sourceOf } from "../../core/provenance.js";
import type { ToolDefinition } from "../define-tool.js";
import type { OriginLens, SteeringSpec } from "../trust-policy.js";

/**
 * What the trust policy needs to know of each built-in tool (src/tools/trust-policy.ts): the
 * arguments that choose what a call's effect acts on (`targets`; content arguments are left
 * out — they may carry untrusted data), and where a value comes from besides the call's inputs
 * (`origin`). Wired onto the tools in builtin/index.ts, like their file effects.
 */
type TrustSpec = Pick<ToolDefinition, "targets" | "origin">;

const text = (value: unknown): string => (typeof value === "string" ? value : "");

/** A workspace path under `trust.untrusted`, as a source. */
function pathSource(path: unknown, lens: OriginLens): Source[] {
  const name = text(path);
  return name !== "" && lens.untrustedPath(name) ? [sourceOf("workspace", name)] : [];
}

const FILE_WRITE: SteeringSpec = { targets: { path: "path" } };

export const TRUST_SPECS: Record<string, TrustSpec> = {
  file_read: { origin: (args, _value, lens) => pathSource(args.path, lens) },
  text_stats: { origin: (args, _value, lens) => pathSource(args.path, lens) },
  file_list: {
    // An entry is named by whoever put it in its folder: the listing is untrusted when it lists an untrusted folder's contents.
    origin: (args, value, lens) => {
      const own = pathSource(text(args.path) || ".", lens);
      if (own.length > 0 || !lens.hasUntrustedPaths) return own;
      const entries = (value as { entries?: Array<{ path?: unknown }> } | undefined)?.entries;
      const parentOf = (path: string): string => path.split("/").slice(0, -1).join("/");
      const inside = Array.isArray(entries) ? entries.find((entry) => parentOf(text(entry.path)) !== "" && lens.untrustedPath(parentOf(text(entry.path)))) : undefined;
      return inside ? [sourceOf("workspace", parentOf(text(inside.path)))] : [];
    },
  },
  file_write: { targets: () => FILE_WRITE },
  file_append: { targets: () => FILE_WRITE },
  file_delete: { targets: () => FILE_WRITE },
  propose_edit: { targets: () => FILE_WRITE },
  // A move removes its source; a copy only reads it.
  file_move: { targets: () => ({ targets: { from: "path", to: "path" } }), origin: (args, _value, lens) => pathSource(args.from, lens) },
  file_copy: { targets: () => ({ targets: { to: "path" } }), origin: (args, _value, lens) => pathSource(args.from, lens) },
  code_run: {
    // javascript runs in QuickJS with no I/O at all: it can only compute its value, which carries the label of its inputs.
    targets: (args) => (args.language === undefined || args.language === "javascript" ? null : { targets: { code: "code", path: "path", language: "name" } }),
    // A script sees the whole workspace, so its output may hold any untrusted file.
    origin: (args, _value, lens) => {
      if (args.language === undefined || args.language === "javascript") return pathSource(args.path, lens);
      return lens.hasUntrustedPaths ? [sourceOf("workspace", `a ${text(args.language)} script in a workspace that holds untrusted paths`)] : [];
    },
  },
  http_fetch: {
    // Any request can carry data out in its URL or headers; a POST's body is content. A GET of a link read verbatim on the web sends nothing new.
    targets: (args) => (args.method === "POST" ? { targets: { url: "url", headers: "code" } } : { targets: { url: "url", headers: "code" }, link: "url" }),
    origin: (args) => [sourceOf("web", text(args.url))],
  },
  web_search: {
    origin: (args, value, lens) => {
      const found = value as { provider?: unknown; results?: Array<{ source?: unknown; path?: unknown }> } | undefined;
      const provider = text(found?.provider) || text(args.provider);
      if (provider !== "" && provider !== "local") return [sourceOf("search", `${provider}: ${text(args.query)}`)];
      if (!found) return [];
      const untrusted = (found.results ?? []).find((hit) => hit.source === "workspace" && lens.untrustedPath(text(hit.path)));
      return untrusted ? [sourceOf("workspace", text(untrusted.path))] : [];
    },
  },
  // A fact without a subject is found by its text, which then chooses what it overwrites or adds.
  memory_save: { targets: (args): SteeringSpec => (args.subject === undefined ? { targets: { text: "name" } } : { targets: { subject: "name" } }) },
  memory_forget: { targets: () => ({ targets: { id: "name" } }) },
};

/** The tool with its trust spec, when it has one and does not declare its own. */
export function withTrustSpec(tool: ToolDefinition): ToolDefinition {
  const spec = TRUST_SPECS[tool.name];
  if (!spec) return tool;
  return { ...tool, ...(spec.targets && !tool.targets ? { targets: spec.targets } : {}), ...(spec.origin && !tool.origin ? { origin: spec.origin } : {}) };
}
