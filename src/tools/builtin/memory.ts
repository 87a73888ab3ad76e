import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { type Memory, MEMORY_LIMITS, type MemoryHit, MemoryId } from "../../core/memory.js";
import { heldLabel, joinLabels, type Label, LabelledValue, sourceOf } from "../../core/provenance.js";

/** A fact is the user's private data whoever wrote it: what holds it leaves only by the task's word (docs/trust.md). */
function remembered(item: { id: string; subject?: string | null }): Label {
  return heldLabel([sourceOf("memory", item.subject ?? item.id)]);
}
import { preview, truncate } from "../../core/text.js";
import { defineTool, type ToolContext, type ToolDefinition } from "../define-tool.js";
import { argumentLabel } from "../trust-policy.js";

/** Which namespace a call reaches: the run's owner's (from the context), else the caller's. */
export type NamespaceOf = (context: ToolContext) => readonly string[];

export const MemorySaveArgs = z
  .object({
    text: z.string().min(1).max(MEMORY_LIMITS.itemMaxBytes).describe("the fact, as a full sentence (\"the capital of Atlantis is Poseidonia\")"),
    subject: z
      .string()
      .min(1)
      .max(MEMORY_LIMITS.subjectMaxChars)
      .optional()
      .describe("what the fact is about (\"the capital of Atlantis\"); a later fact about the same subject replaces it"),
    ttl_seconds: z.number().int().min(1).max(MEMORY_LIMITS.ttlMaxSeconds).optional().describe("forget it after this many seconds (default: keep it)"),
  })
  .strict();

export const MemorySearchArgs = z
  .object({
    query: z.string().min(1).max(MEMORY_LIMITS.queryMaxChars).describe("what to look for, in words; or a fact's id (m-…) for that fact"),
    limit: z.number().int().min(1).max(20).optional().describe("how many facts at most (default 5)"),
  })
  .strict();

export const MemoryForgetArgs = z.object({ id: MemoryId.describe("the fact's id (m-…), as memory_search gives it") }).strict();

function hitView(hit: MemoryHit) {
  return { id: hit.id, text: hit.text, subject: hit.subject, score: hit.score, updatedAt: new Date(hit.updatedAt).toISOString(), sourceRun: hit.sourceRun };
}

/**
 * The long-term memory tools: save a fact, search the facts, forget one. Each reaches only the
 * namespace of whoever the run belongs to (an API key, or the local user), never another's.
 * Forgetting is high-risk: an agent's call waits for a person's approval.
 */
export function createMemoryTools(memory: Memory, namespaceOf: NamespaceOf): ToolDefinition[] {
  const save = defineTool({
    name: "memory_save",
    description:
      "Remember a fact across conversations (long-term memory): one full sentence, with its subject so a later fact about the same thing replaces it. Returns the fact's id.",
    schema: MemorySaveArgs,
    permission: "WRITE",
    powers: ["memory.write"],
    // A fact without a subject gets a new id each time: a retry would keep it twice.
    idempotent: false,
    idempotentFor: (args) => args.subject !== undefined,
    timeoutMs: 10_000,
    async execute(args, context) {
      const { item, created } = await memory.save(namespaceOf(context), {
        text: args.text,
        ...(args.subject !== undefined ? { subject: args.subject } : {}),
        ...(args.ttl_seconds !== undefined ? { ttlSeconds: args.ttl_seconds } : {}),
        sourceRun: context.runId ?? null,
        // The fact keeps the label of its text: saved from untrusted content, it stays untrusted data.
        label: argumentLabel("text", args.text, context.provenance),
      });
      return { id: item.id, created, text: item.text, subject: item.subject, expiresAt: item.expiresAt === null ? null : new Date(item.expiresAt).toISOString() };
    },
    summarize: (value) => {
      const saved = value as { id: string; created: boolean; text: string };
      return `${saved.created ? "remembered" : "updated"} ${saved.id}: ${truncate(saved.text, 200)}`;
    },
  });

  const search = defineTool({
    name: "memory_search",
    description: "Search long-term memory (facts remembered in earlier conversations) for what is known about something, or take one fact by its id. Returns the best matches with their ids.",
    schema: MemorySearchArgs,
    permission: "READ",
    powers: ["memory.read"],
    idempotent: true,
    timeoutMs: 10_000,
    async execute(args, context) {
      const namespace = namespaceOf(context);
      const id = MemoryId.safeParse(args.query.trim());
      if (id.success) {
        // A fact by its id (the planner names an untrusted fact by id only).
        const item = await memory.get(namespace, id.data);
        const items = item ? [hitView({ ...item, score: 1 })] : [];
        return new LabelledValue({ query: args.query, retrieval: "lexical", items }, joinLabels(item?.label, item ? remembered(item) : undefined));
      }
      const found = await memory.search(namespace, args.query, { limit: args.limit ?? 5 });
      const value = { query: args.query, retrieval: found.retrieval, items: found.items.map(hitView), ...(found.note ? { note: found.note } : {}) };
      // What was found keeps its facts' labels.
      return new LabelledValue(value, joinLabels(...found.items.flatMap((item) => [item.label, remembered(item)])));
    },
    summarize: (value) => {
      const found = value as { query: string; retrieval: string; items: Array<{ id: string; text: string }> };
      if (found.items.length === 0) return `no remembered fact matches "${truncate(found.query, 80)}" (${found.retrieval})`;
      return truncate(`${found.items.length} fact${found.items.length === 1 ? "" : "s"} (${found.retrieval}): ${found.items.map((item) => `${item.id}: ${item.text}`).join("; ")}`, 400);
    },
  });

  const forget = defineTool({
    name: "memory_forget",
    description: "Forget a fact in long-term memory, by its id (from memory_search). High-risk: a person approves it first.",
    schema: MemoryForgetArgs,
    permission: "WRITE",
    powers: ["memory.delete"],
    idempotent: true,
    timeoutMs: 10_000,
    async execute(args, context) {
      const namespace = namespaceOf(context);
      const item = await memory.get(namespace, args.id);
      if (!item || !(await memory.forget(namespace, args.id))) throw new ToolError("memory_not_found", `there is no remembered fact ${args.id}`, { id: args.id });
      return new LabelledValue({ id: args.id, forgotten: true, text: item.text }, item.label);
    },
    summarize: (value) => {
      const gone = value as { id: string; text: string };
      return `forgot ${gone.id}: ${preview(gone.text, 200)}`;
    },
  });

  return [save as ToolDefinition, search as ToolDefinition, forget as ToolDefinition];
}
