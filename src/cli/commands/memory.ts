import type { Command } from "commander";
import { InputError, NotFoundError } from "../../core/errors.js";
import type { Memory, MemoryItem } from "../../core/memory.js";
import { describeLabel, isUntrusted } from "../../core/provenance.js";
import { truncate } from "../../core/text.js";
import { color, out, parseNumberFlag, printJson } from "../io.js";

interface MemoryFlags {
  json?: boolean;
  dataDir?: string;
  databaseUrl?: string;
  principal?: string;
  limit?: string;
  offset?: string;
}

const when = (ms: number): string => new Date(ms).toISOString().replace("T", " ").slice(0, 16);

/** `untrusted` before a fact saved from untrusted content (it reaches a planner only as marked data). */
function trustMark(item: MemoryItem): string {
  return isUntrusted(item.label) ? `${color.yellow("untrusted")}  ` : "";
}

function itemLine(item: MemoryItem, score?: number): string {
  const scored = score === undefined ? "" : color.dim(` (${score.toFixed(3)})`);
  return `${item.id}  ${color.dim(when(item.updatedAt))}  ${trustMark(item)}${truncate(item.text.replace(/\s+/g, " "), 100)}${scored}`;
}

function wholeNumber(value: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = parseNumberFlag(value);
  if (!Number.isInteger(number) || number < min || number > max) throw new InputError("invalid_flag", `${flag} must be a whole number from ${min} to ${max}`);
  return number;
}

/** Opens the memory of the data directory, runs `body` on the caller's namespace, and closes it. */
async function withMemory<T>(flags: MemoryFlags, body: (access: { memories: Memory; namespace: string[] }) => Promise<T>): Promise<T> {
  const { memoryNamespaceFor, openMemory } = await import("../../runtime/memory-owner.js");
  if (flags.principal !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(flags.principal)) throw new InputError("invalid_principal", "--principal is an API key's name (letters, digits, '.', '_', '-')");
  const opened = await openMemory({ ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}), ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}) });
  try {
    return await body({ memories: opened.memories, namespace: memoryNamespaceFor(flags.principal) });
  } finally {
    await opened.close();
  }
}

/**
 * `troupe memory list | search <query> | show <id> | forget <id>`: the long-term memory of the
 * local user (the facts runs from this machine saved), or with `--principal` an API key's.
 */
export function registerMemory(program: Command): void {
  const memory = program.command("memory").description("long-term memory: the facts kept across conversations (the local user's, or --principal's)");
  const common = (command: Command): Command =>
    command
      .option("--json", "print JSON")
      .option("--data-dir <dir>", "where runs and memories are kept (default: TROUPE_DATA_DIR or ./.troupe)")
      .option("--database-url <url>", "postgres://…: the memories kept on Postgres (default: TROUPE_DATABASE_URL)")
      .option("--principal <name>", "an API key's memories (the server's), instead of the local user's");

  common(memory.command("list").description("facts, most recently updated first").option("--limit <n>", "how many, 1–1000 (default 50)").option("--offset <n>", "skip this many")).action(
    async (flags: MemoryFlags) => {
      const limit = wholeNumber(flags.limit, "--limit", 1, 1_000) ?? 50;
      const offset = wholeNumber(flags.offset, "--offset", 0, Number.MAX_SAFE_INTEGER) ?? 0;
      await withMemory(flags, async ({ memories, namespace }) => {
        const { items, total } = await memories.list(namespace, { limit, offset });
        if (flags.json) return printJson({ namespace, total, items });
        if (total === 0) return out("nothing remembered yet");
        for (const item of items) out(itemLine(item));
        out(color.dim(`${items.length} of ${total} fact${total === 1 ? "" : "s"}`));
      });
    },
  );

  common(memory.command("search").description("the facts most relevant to a query").argument("<query>", "what to look for").option("--limit <n>", "how many, 1–50 (default 5)")).action(
    async (query: string, flags: MemoryFlags) => {
      const limit = wholeNumber(flags.limit, "--limit", 1, 50) ?? 5;
      await withMemory(flags, async ({ memories, namespace }) => {
        const found = await memories.search(namespace, query, { limit });
        if (flags.json) return printJson({ query, ...found });
        if (found.items.length === 0) out(`no remembered fact matches "${truncate(query, 80)}"`);
        for (const item of found.items) out(itemLine(item, item.score));
        out(color.dim(`retrieval: ${found.retrieval}${found.note ? ` (${found.note})` : ""}`));
      });
    },
  );

  common(memory.command("show").description("one fact, with where it came from").argument("<id>", "the fact's id (m-…)")).action(async (id: string, flags: MemoryFlags) => {
    await withMemory(flags, async ({ memories, namespace }) => {
      const item = await memories.get(namespace, id);
      if (!item) throw new NotFoundError("memory_not_found", `there is no remembered fact ${id}`, { id });
      if (flags.json) return printJson(item);
      out(item.text);
      out("");
      out(`id: ${item.id}`);
      if (item.subject) out(`subject: ${item.subject}`);
      out(`saved by: ${item.sourceRun ?? "a person"}`);
      out(`trust: ${describeLabel(item.label)}`);
      out(`created: ${when(item.createdAt)} · updated: ${when(item.updatedAt)}${item.expiresAt !== null ? ` · expires: ${when(item.expiresAt)}` : ""}`);
    });
  });

  common(memory.command("forget").description("forget one fact").argument("<id>", "the fact's id (m-…)")).action(async (id: string, flags: MemoryFlags) => {
    await withMemory(flags, async ({ memories, namespace }) => {
      const item = await memories.get(namespace, id);
      if (!item || !(await memories.forget(namespace, id))) throw new NotFoundError("memory_not_found", `there is no remembered fact ${id}`, { id });
      if (flags.json) return printJson({ id, forgotten: true, text: item.text });
      out(`forgot ${id}: ${truncate(item.text, 100)}`);
    });
  });
}
