/**
 * Memory: (1) the planner's prompt on the 20th turn of a thread against the 1st, on the offline
 * model in-process — the history it is given is trimmed to the history budget, so the prompt
 * grows until the budget fills and stays flat after; (2) long-term memory search latency with
 * 10,000 facts in the caller's namespace (and 10,000 more in another's), lexical (FTS5, BM25)
 * and hybrid (with a 64-dimension hashing embeddings model, so no network is involved).
 */
import path from "node:path";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { BaseMessage } from "@langchain/core/messages";
import { memoryNamespace } from "../src/core/memory.js";
import { roleOf } from "../src/core/prompt-protocol.js";
import { countMessageTokens } from "../src/providers/token-count.js";
import { Troupe } from "../src/runtime/engine.js";
import { openStore } from "../src/store/index.js";
import { HashingEmbeddings } from "../src/testing/hashing-embeddings.js";
import { type Summary, summarize, withTempDir } from "./support.js";

export interface TurnFigures {
  turn: number;
  task: string;
  status: string;
  /** Tokens of the planner's prompt (system and request), as sent. */
  plannerTokens: number;
  /** Tokens of the history section (the history-ready event), 0 on the first turn. */
  historyTokens: number;
  turnsKept: number;
  turnsSummarised: number;
}

export interface SearchFigures {
  retrieval: string;
  searches: number;
  latencyMs: Summary;
  /** Searches that found at least one fact. */
  hits: number;
}

export interface MemoryBenchReport {
  historyBudget: number;
  turns: TurnFigures[];
  /** The first turn whose history had to be trimmed (the budget filled), if any. */
  filledAt: number | null;
  first: number;
  last: number;
  /** Max − min of the planner's prompt from the turn the budget filled on. */
  spreadAfterFill: number;
  items: number;
  otherNamespaceItems: number;
  insertMs: number;
  lexical: SearchFigures;
  hybrid: SearchFigures;
  target: {
    historyWithinBudget: boolean;
    flatAfterFill: boolean;
    lexicalP95Ms: number;
    hybridP95Ms: number;
    met: boolean;
  };
}

/** Tasks the offline model carries out, each referring back to the turns before it. */
function taskOf(turn: number): string {
  switch (turn % 5) {
    case 1:
      return `compute ${turn} * 7 + 3`;
    case 2:
      return "double it";
    case 3:
      return `save it to result-${turn}.txt`;
    case 4:
      return "count the characters in that file";
    default:
      return `remember that the code of box ${turn} is ${turn * 11}`;
  }
}

/** Counts the tokens of every planner prompt a run sends, as the planner's model receives it. */
class PlannerPrompts extends BaseCallbackHandler {
  name = "planner-prompts";
  readonly pending: Array<Promise<number>> = [];

  override handleChatModelStart(_llm: unknown, messages: BaseMessage[][]): void {
    const prompt = messages[0] ?? [];
    const system = prompt.find((message) => message.getType() === "system");
    if (system && roleOf(typeof system.content === "string" ? system.content : system.text) === "planner") this.pending.push(countMessageTokens(prompt));
  }
}

async function measureTurns(directory: string, historyBudget: number, turns: number): Promise<TurnFigures[]> {
  const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace"), config: { memory: { historyBudget } } });
  const figures: TurnFigures[] = [];
  try {
    for (let turn = 1; turn <= turns; turn += 1) {
      const prompts = new PlannerPrompts();
      const task = taskOf(turn);
      let history = { tokens: 0, turns: 0, trimmed: 0 };
      const result = await troupe.run(
        { task, threadId: "bench-thread" },
        {
          callbacks: [prompts],
          onEvent: (event) => {
            if (event.type === "history-ready") history = { tokens: event.tokens, turns: event.turns, trimmed: event.trimmed };
          },
        },
      );
      const tokens = await Promise.all(prompts.pending);
      figures.push({ turn, task, status: result.status, plannerTokens: tokens[0] ?? 0, historyTokens: history.tokens, turnsKept: history.turns, turnsSummarised: history.trimmed });
    }
  } finally {
    troupe.close();
  }
  return figures;
}

const WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu".split(" ");

/** The i-th generated fact: a subject of two words and a value, so searches have something to tell apart. */
function factOf(index: number): { text: string; subject: string } {
  const a = WORDS[index % WORDS.length] as string;
  const b = WORDS[Math.floor(index / WORDS.length) % WORDS.length] as string;
  const subject = `the ${a} ${b} setting ${index}`;
  return { subject, text: `${subject} is ${(index * 7919) % 10_007} units, recorded for project ${WORDS[(index * 3) % WORDS.length]}` };
}

async function measureSearch(directory: string, items: number, searches: number, hybrid: boolean): Promise<{ figures: SearchFigures; insertMs: number }> {
  const store = await openStore({ dataDir: path.join(directory, hybrid ? "hybrid" : "lexical"), ...(hybrid ? { memory: { index: { embeddings: new HashingEmbeddings({ dims: 64 }), model: "bench:hashing-64" } } } : {}) });
  try {
    const mine = memoryNamespace({ kind: "key", name: "bench" });
    const theirs = memoryNamespace({ kind: "key", name: "someone-else" });
    const started = performance.now();
    for (const namespace of [mine, theirs]) {
      // A batch of writes is one transaction in the store: 500 facts a commit.
      for (let from = 0; from < items; from += 500) {
        const batch = Array.from({ length: Math.min(500, items - from) }, (_, offset) => {
          const fact = factOf(from + offset);
          return { namespace, key: `m-${(from + offset).toString(16).padStart(12, "0")}`, value: { text: fact.text, subject: fact.subject, sourceRun: null, expiresAt: null } };
        });
        await store.memoryStore.batch(batch);
      }
    }
    const insertMs = performance.now() - started;
    const latencies: number[] = [];
    let hits = 0;
    let retrieval = "";
    for (let search = 0; search < searches; search += 1) {
      const fact = factOf((search * 37) % items);
      const query = search % 2 === 0 ? `what is ${fact.subject}?` : `${WORDS[search % WORDS.length]} setting units`;
      const begun = performance.now();
      const found = await store.memories.search(mine, query, { limit: 5 });
      latencies.push(performance.now() - begun);
      retrieval = found.retrieval;
      if (found.items.length > 0) hits += 1;
    }
    return { figures: { retrieval, searches, latencyMs: summarize(latencies), hits }, insertMs };
  } finally {
    await store.close();
  }
}

export async function measureMemory(options: { turns?: number; historyBudget?: number; items?: number; searches?: number } = {}): Promise<MemoryBenchReport> {
  const turnsWanted = options.turns ?? 20;
  const historyBudget = options.historyBudget ?? 2_000;
  const items = options.items ?? 10_000;
  const searches = options.searches ?? 200;
  return withTempDir("troupe-bench-memory-", async (directory) => {
    const turns = await measureTurns(directory, historyBudget, turnsWanted);
    const filled = turns.find((turn) => turn.turnsSummarised > 0);
    const after = filled ? turns.filter((turn) => turn.turn >= filled.turn).map((turn) => turn.plannerTokens) : [];
    const spreadAfterFill = after.length > 0 ? Math.max(...after) - Math.min(...after) : 0;
    const lexical = await measureSearch(directory, items, searches, false);
    const hybrid = await measureSearch(directory, items, searches, true);
    const first = turns[0]?.plannerTokens ?? 0;
    const last = turns.at(-1)?.plannerTokens ?? 0;
    const historyWithinBudget = turns.every((turn) => turn.historyTokens <= historyBudget);
    // Flat: from the turn the budget filled, the prompt moves by at most a quarter of the budget (one turn's worth comes and goes).
    const flatAfterFill = filled !== undefined && spreadAfterFill <= historyBudget / 4 && last - first <= historyBudget + 300;
    const lexicalP95Ms = 50;
    const hybridP95Ms = 250;
    return {
      historyBudget,
      turns,
      filledAt: filled?.turn ?? null,
      first,
      last,
      spreadAfterFill,
      items,
      otherNamespaceItems: items,
      insertMs: lexical.insertMs,
      lexical: lexical.figures,
      hybrid: hybrid.figures,
      target: {
        historyWithinBudget,
        flatAfterFill,
        lexicalP95Ms,
        hybridP95Ms,
        met: historyWithinBudget && flatAfterFill && lexical.figures.latencyMs.p95 <= lexicalP95Ms && hybrid.figures.latencyMs.p95 <= hybridP95Ms,
      },
    };
  });
}
