import { type Source, sourceOf } from "../../core/provenance.js";
import { preview } from "../../core/text.js";
import type { ToolDefinition } from "../define-tool.js";
import type { SteeringSpec } from "../trust-policy.js";

/**
 * What the trust policy needs to know of each built-in tool (src/tools/trust-policy.ts): the
 * arguments that choose what a call's effect acts on (`targets`; content arguments are left
 * out — they may carry untrusted data), where a value comes from besides the call's inputs
 * (`origin`), where a call sends data out (`sends`, src/tools/egress.ts), and what a call would
 * do in words (`describe`, for an approval). The file tools label what they read themselves, by
 * the file they opened (src/tools/file-trust.ts). Wired onto the tools in builtin/index.ts.
 */
type TrustSpec = Pick<ToolDefinition, "targets" | "origin" | "sends" | "describe">;

const text = (value: unknown): string => (typeof value === "string" ? value : "");
const quoted = (value: unknown): string => JSON.stringify(preview(value, 80));
const size = (value: unknown): string => `${text(value).length} character${text(value).length === 1 ? "" : "s"}`;

const FILE_WRITE: SteeringSpec = { targets: { path: "path" } };

export const TRUST_SPECS: Record<string, TrustSpec> = {
  file_write: { targets: () => FILE_WRITE, describe: (args) => `write ${size(args.content)} to ${text(args.path)}${args.overwrite === false ? "" : " (replacing what is there)"}: ${quoted(args.content)}` },
  file_append: { targets: () => FILE_WRITE, describe: (args) => `append ${size(args.content)} to ${text(args.path)}: ${quoted(args.content)}` },
  file_delete: { targets: () => FILE_WRITE, describe: (args) => `delete ${text(args.path)}${args.recursive === true ? " and everything in it" : ""}` },
  propose_edit: { targets: () => FILE_WRITE, describe: (args) => `change ${text(args.path)}` },
  // A move removes its source; a copy only reads it.
  file_move: { targets: () => ({ targets: { from: "path", to: "path" } }), describe: (args) => `move ${text(args.from)} to ${text(args.to)}` },
  file_copy: { targets: () => ({ targets: { to: "path" } }), describe: (args) => `copy ${text(args.from)} to ${text(args.to)}` },
  code_run: {
    // javascript runs in QuickJS with no I/O at all, and python or node without `writes: true` in a sandbox with no network and
    // a workspace that is read-only (or writable only at the paths the plan declares): they can only compute their value, which
    // carries the label of what they read. A script that may change any file chose its effect: its code (or the script it runs) is the target.
    targets: (args): SteeringSpec | null => {
      if (args.language === undefined || args.language === "javascript" || args.writes !== true) return null;
      return args.path !== undefined && args.code === undefined ? { targets: { path: "path" } } : { targets: { code: "code", language: "name" } };
    },
    // What a python or node script printed may be any workspace file's, a failed run's output too (its value's label, with records, is the tool's own).
    origin: (args, _value, lens) =>
      args.language === undefined || args.language === "javascript" || !lens.hasUntrustedPaths ? [] : [sourceOf("workspace", `a ${text(args.language)} script in a workspace that holds untrusted files`)],
    describe: (args) => (args.path !== undefined ? `run the ${text(args.language) || "javascript"} script ${text(args.path)}` : `run ${text(args.language) || "javascript"} code${args.writes === true ? " that may change any workspace file" : ""}: ${quoted(args.code)}`),
  },
  http_fetch: {
    // Any request can carry data out in its URL or headers; a POST's body is content. A GET of a link read verbatim on the web sends nothing new.
    targets: (args) => (args.method === "POST" ? { targets: { url: "url", headers: "code" } } : { targets: { url: "url", headers: "code" }, link: "url" }),
    origin: (args) => [sourceOf("web", text(args.url))],
    sends: (args) => ({ destination: { kind: "url", name: text(args.url) }, destinationArgument: "url", payload: { url: "url", headers: "code", body: "name" }, link: "url" }),
    describe: (args) => {
      const headers = typeof args.headers === "object" && args.headers !== null ? Object.keys(args.headers) : [];
      return `${text(args.method) || "GET"} ${text(args.url)}${args.body !== undefined ? ` with a body of ${size(args.body)}: ${quoted(args.body)}` : ""}${headers.length > 0 ? ` and the headers ${headers.join(", ")}` : ""}`;
    },
  },
  web_search: {
    // An online search's results are anyone's; a local one's are judged file by file (web-search.ts).
    origin: (args, value) => {
      const found = value as { provider?: unknown } | undefined;
      const provider = text(found?.provider) || text(args.provider);
      return provider !== "" && provider !== "local" ? [sourceOf("search", `${provider}: ${text(args.query)}`)] : ([] as Source[]);
    },
  },
  // A fact without a subject is found by its text, which then chooses what it overwrites or adds.
  memory_save: {
    targets: (args): SteeringSpec => (args.subject === undefined ? { targets: { text: "name" } } : { targets: { subject: "name" } }),
    describe: (args) => `remember${args.subject !== undefined ? ` under "${preview(args.subject, 80)}"` : ""}: ${quoted(args.text)}`,
  },
  memory_forget: { targets: () => ({ targets: { id: "name" } }), describe: (args) => `forget the remembered fact ${text(args.id)}` },
};

/** The tool with its trust spec, where it declares none of its own. */
export function withTrustSpec(tool: ToolDefinition): ToolDefinition {
  const spec = TRUST_SPECS[tool.name];
  if (!spec) return tool;
  const merged: ToolDefinition = { ...tool };
  for (const key of ["targets", "origin", "sends", "describe"] as const) if (spec[key] && !tool[key]) (merged as unknown as Record<string, unknown>)[key] = spec[key];
  return merged;
}
