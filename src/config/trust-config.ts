import { z } from "zod";
import { UNTRUSTED_PATH_LIMITS, untrustedPatternProblem } from "../tools/untrusted-paths.js";

/**
 * The config file's `trust` section: which workspace paths hold untrusted content (globs such as
 * `inbox/**`; the rest of the workspace is the user's own and trusted), and what happens to a
 * side-effecting call steered by untrusted data — `ask` a person (the default), `deny` it, or
 * `allow` it (opting out of the defence; labels are still kept and shown). See docs/trust.md.
 */
export const TrustMode = z.enum(["ask", "deny", "allow"]);
export type TrustMode = z.infer<typeof TrustMode>;

export const TrustConfig = z
  .object({
    untrusted: z
      .array(
        z.string().superRefine((pattern, context) => {
          const problem = untrustedPatternProblem(pattern);
          if (problem) context.addIssue({ code: "custom", message: problem });
        }),
      )
      .max(UNTRUSTED_PATH_LIMITS.patterns, { error: `at most ${UNTRUSTED_PATH_LIMITS.patterns} untrusted patterns` })
      .optional(),
    /** Default `ask`; nothing in the workspace is untrusted by default. */
    policy: TrustMode.optional(),
  })
  .strict();
export type TrustConfig = z.infer<typeof TrustConfig>;
