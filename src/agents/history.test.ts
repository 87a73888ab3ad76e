import { describe, expect, it } from "vitest";
import { type Conversation, emptyConversation, renderConversation, type Turn, withTurn } from "../core/conversation.js";
import { countTextTokens } from "../providers/token-count.js";
import { trimConversation } from "./history.js";

/** A turn whose task and answer take about `words` words each. */
function turn(index: number, words = 20): Turn {
  const filler = Array.from({ length: words }, (_, word) => `word${index}x${word}`).join(" ");
  return {
    run: `run-${index}`,
    task: `task number ${index}: ${filler}`,
    status: "completed",
    answer: `answer ${index}: ${filler}`,
    results: [{ subtask: "s1", label: `Compute step ${index}`, handle: `stash:run-${index}/s1`, summary: `${index} + 1 = ${index + 1}`, bytes: 2, shape: "number", value: String(index + 1) }],
    files: index % 3 === 0 ? [`file-${index}.txt`] : [],
    at: index,
  };
}

function conversationOf(count: number, words = 20): Conversation {
  let conversation = emptyConversation();
  for (let index = 1; index <= count; index += 1) conversation = withTurn(conversation, turn(index, words));
  return conversation;
}

async function renderedTokens(conversation: Conversation): Promise<number> {
  const text = renderConversation(conversation);
  return text === undefined ? 0 : countTextTokens(text);
}

describe("trimConversation", () => {
  it("keeps a 30-turn thread's history flat once the budget fills: summary and turns share it, so the summary filling up does not grow the prompt", async () => {
    const budget = 1_500;
    let conversation = emptyConversation();
    const sizes: number[] = [];
    let filledAt: number | undefined;
    let largestTurn = 0;
    for (let index = 1; index <= 30; index += 1) {
      const added = withTurn(conversation, turn(index));
      largestTurn = Math.max(largestTurn, await renderedTokens({ ...added, turns: added.turns.slice(-1), summary: { lines: [], omitted: 0 } }));
      const trimmed = await trimConversation(added, budget);
      if (trimmed.dropped > 0) filledAt ??= index;
      conversation = trimmed.conversation;
      sizes.push(trimmed.tokens);
    }
    expect(filledAt).toBeDefined();
    const after = sizes.slice(filledAt);
    expect(Math.max(...after)).toBeLessThanOrEqual(budget);
    // Within one turn of the budget from the turn it filled on to the 30th, the summary long since listing its trimmed turns.
    // (a turn's rendering differs from its own by the summary line it becomes, a few dozen tokens).
    expect(Math.min(...after)).toBeGreaterThanOrEqual(budget - largestTurn - 50);
    expect(Math.max(...after) - Math.min(...after)).toBeLessThanOrEqual(largestTurn + 50);
    expect(conversation.summary.lines.length).toBeGreaterThan(3);
  });

  it("keeps every turn while they fit", async () => {
    const conversation = conversationOf(3);
    const trimmed = await trimConversation(conversation, 2_000);
    expect(trimmed.dropped).toBe(0);
    expect(trimmed.conversation).toEqual(conversation);
    expect(trimmed.tokens).toBe(await renderedTokens(conversation));
  });

  it("keeps the newest turns and a summary of the rest, all within the budget (counted with the tokenizer)", async () => {
    const budget = 1_000;
    const conversation = conversationOf(30);
    expect(await renderedTokens(conversation)).toBeGreaterThan(budget * 3);
    const trimmed = await trimConversation(conversation, budget);
    const kept = trimmed.conversation.turns.map((item) => item.run);
    // The newest turns, in order, ending with the last one.
    expect(kept.length).toBeGreaterThan(1);
    expect(kept.at(-1)).toBe("run-30");
    expect(kept).toEqual(conversation.turns.slice(-kept.length).map((item) => item.run));
    expect(trimmed.conversation.trimmed).toBe(30 - kept.length);
    expect(trimmed.dropped).toBe(30 - kept.length);
    // The summary names what was dropped, newest lines kept, and stays within a quarter of the budget.
    const summary = trimmed.conversation.summary;
    expect(summary.lines.length + summary.omitted).toBe(30 - kept.length);
    expect(summary.lines.at(-1)).toContain(`#${30 - kept.length} "task number ${30 - kept.length}`);
    const summaryText = [summary.omitted > 0 ? `${summary.omitted} earlier turns not listed` : "", ...summary.lines].filter(Boolean).join("; ");
    expect(await countTextTokens(summaryText)).toBeLessThanOrEqual(budget / 4);
    // The whole history as the planner sees it.
    const tokens = await renderedTokens(trimmed.conversation);
    expect(tokens).toBe(trimmed.tokens);
    expect(tokens).toBeLessThanOrEqual(budget);
    expect(tokens).toBeGreaterThan(budget / 2);
  });

  it("is a running summary: trimming again folds the newly dropped turns into it", async () => {
    const budget = 600;
    const first = await trimConversation(conversationOf(10), budget);
    let conversation = first.conversation;
    for (let index = 11; index <= 25; index += 1) {
      conversation = (await trimConversation(withTurn(conversation, turn(index)), budget)).conversation;
      expect(await renderedTokens(conversation)).toBeLessThanOrEqual(budget);
      expect(conversation.turns.at(-1)?.run).toBe(`run-${index}`);
      expect(conversation.trimmed + conversation.turns.length).toBe(index);
    }
    expect(conversation.summary.lines.length + conversation.summary.omitted).toBe(conversation.trimmed);
  });

  it("drops a turn larger than the whole budget into the summary rather than overflowing", async () => {
    const trimmed = await trimConversation(conversationOf(2, 400), 300);
    expect(trimmed.conversation.turns).toEqual([]);
    expect(trimmed.conversation.trimmed).toBe(2);
    expect(await renderedTokens(trimmed.conversation)).toBeLessThanOrEqual(300);
  });

  it("gives nothing at budget 0, and nothing to trim for an empty conversation", async () => {
    const off = await trimConversation(conversationOf(5), 0);
    expect(renderConversation(off.conversation)).toBeUndefined();
    expect(off.tokens).toBe(0);
    const empty = await trimConversation(emptyConversation(), 2_000);
    expect(empty).toEqual({ conversation: emptyConversation(), dropped: 0, tokens: 0 });
  });
});

describe("withTurn", () => {
  it("bounds what a turn keeps, and records a run once", () => {
    const big: Turn = { ...turn(1), task: "t".repeat(5_000), answer: "a".repeat(50_000), results: Array.from({ length: 30 }, (_, index) => ({ ...turn(1).results[0]!, subtask: `s${index}` })), files: Array.from({ length: 30 }, (_, index) => `f${index}.txt`) };
    const conversation = withTurn(withTurn(emptyConversation(), big), big);
    expect(conversation.turns).toHaveLength(1);
    const kept = conversation.turns[0]!;
    expect(kept.task.length).toBeLessThanOrEqual(400);
    expect(kept.answer?.length).toBeLessThanOrEqual(300);
    expect(kept.results.map((result) => result.subtask)).toEqual(["s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29"]);
    expect(kept.files).toHaveLength(8);
    expect(JSON.stringify(conversation).length).toBeLessThan(5_000);
  });
});
