import { z } from "zod";
import { destinationProblem, EGRESS_LIMITS } from "./egress-rules.js";
import { PATH_PATTERN_LIMITS, pathPatternProblem } from "./path-patterns.js";

/**
 * The config file's `trust` section (docs/trust.md). By default everything a tool brings in is
 * untrusted — every workspace file too — and what the task names stays allowed; the section
 * relaxes that where the user knows better:
 *
 * - `trusted`: workspace globs holding the user's own files (`notes/**`, or `**` for the whole
 *   workspace); a file there is trusted unless troupe wrote it from untrusted data.
 * - `untrusted`: globs that stay untrusted even inside `trusted` (`inbox/**`), matched with case
 *   folded always (`Inbox/` is `inbox/**`'s folder wherever it may be).
 * - `egress`: destinations the workspace's, memory's and other tools' data may be sent to without
 *   a person approving: `https://api.example.com/` (a URL prefix), `mcp:<server>`, `agent:<name>`.
 * - `policy`: what a call steered by untrusted data, or sending data where nobody named, does —
 *   `ask` a person (the default), `deny` it, or `allow` it (opting out; labels are still kept).
 */
export const TrustMode = z.enum(["ask", "deny", "allow"]);
export type TrustMode = z.infer<typeof TrustMode>;

const pathPatterns = (what: string) =>
  z
    .array(
      z.string().superRefine((pattern, context) => {
        const problem = pathPatternProblem(pattern);
        if (problem) context.addIssue({ code: "custom", message: problem });
      }),
    )
    .max(PATH_PATTERN_LIMITS.patterns, { error: `at most ${PATH_PATTERN_LIMITS.patterns} ${what} patterns` });

export const TrustConfig = z
  .object({
    /** Workspace globs of the user's own files (default: none — every workspace file is untrusted). */
    trusted: pathPatterns("trusted").optional(),
    /** Workspace globs untrusted even where `trusted` matches. */
    untrusted: pathPatterns("untrusted").optional(),
    /** Where data read from the workspace, memory or another tool may go without asking. */
    egress: z
      .array(
        z.string().superRefine((destination, context) => {
          const problem = destinationProblem(destination);
          if (problem) context.addIssue({ code: "custom", message: problem });
        }),
      )
      .max(EGRESS_LIMITS.destinations, { error: `at most ${EGRESS_LIMITS.destinations} egress destinations` })
      .optional(),
    /** Default `ask`. */
    policy: TrustMode.optional(),
  })
  .strict();
export type TrustConfig = z.infer<typeof TrustConfig>;
