import { z } from "zod";

/**
 * A remote agent: another agent system reached over A2A, by its agent card's URL. troupe fetches
 * the card (through the network guard), the planner sees its skills as capabilities, and a
 * subtask given to it is sent as an A2A message through the tool `a2a.<name>`, under a level and
 * a risk like any tool's.
 */
export const RemoteAgentConfig = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, { error: "an agent name is lower-case letters, digits, '_' or '-' (at most 32)" }),
    /** The agent card's URL (`https://agent.example/.well-known/agent-card.json`). */
    a2a: z.url({ protocol: /^https?$/, error: "a2a is the http(s) URL of the agent's card" }),
    /** What the planner is told, instead of the card's description. */
    description: z.string().trim().min(1).max(500).optional(),
    /** What it is good at (default: the card's skills, as capability names). */
    capabilities: z.array(z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, { error: "a capability is lower-case letters, digits and '-'" })).max(20).optional(),
    /** The level a caller needs to send it work (default EXECUTE), and its risk: `high` waits for a person's approval before each message. */
    level: z.enum(["READ", "WRITE", "EXECUTE", "ADMIN"]).default("EXECUTE"),
    risk: z.enum(["low", "medium", "high"]).default("medium"),
    /** How long one message may take to come back finished, in milliseconds (default 10 minutes). */
    timeoutMs: z.number().int().min(1_000).max(86_400_000).default(600_000),
    /** The environment variable holding a bearer key for the agent (sent only to the card's own origin). */
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "apiKeyEnv is the name of an environment variable" }).optional(),
    /** When its card cannot be fetched, go on without it (a warning) instead of stopping. */
    optional: z.boolean().default(false),
    /** Its answers are trusted (a system you run): by default they are untrusted data, like everything a tool brings in (docs/trust.md). */
    trusted: z.boolean().default(false),
  })
  .strict();
export type RemoteAgentConfig = z.infer<typeof RemoteAgentConfig>;
