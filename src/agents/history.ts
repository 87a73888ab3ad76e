import { AIMessage, type BaseMessage, HumanMessage, trimMessages } from "@langchain/core/messages";
import { type Conversation, CONVERSATION_LIMITS, type ConversationSummary, digestOf, renderConversation, summaryText, type Turn, turnView } from "../core/conversation.js";
import { countMessageTokens, countTextTokens } from "../providers/token-count.js";

/** Tokens the JSON around the turns (braces, keys, the summary's quotes) may take, beyond what the messages count. */
const FRAME_TOKENS = 16;

/** What trimming did: the conversation as the planner will see it, and how many turns went into the summary. */
export interface TrimmedConversation {
  conversation: Conversation;
  /** Turns trimmed away this time (now lines of the summary). */
  dropped: number;
  /** Tokens of the rendered history (0 when there is none). */
  tokens: number;
}

/** A turn as two chat messages: the person's task, and troupe's answer with its results and files. */
function turnMessages(turn: Turn, number: number): BaseMessage[] {
  const { task, ...rest } = turnView(turn, number);
  return [new HumanMessage({ content: task, id: `${turn.run}:task` }), new AIMessage({ content: JSON.stringify(rest), id: `${turn.run}:answer` })];
}

/** The summary with the dropped turns' lines added, cut (oldest lines first, into the count) to `maxTokens`. */
async function foldSummary(summary: ConversationSummary, dropped: Turn[], firstNumber: number, maxTokens: number): Promise<ConversationSummary> {
  const lines = [...summary.lines, ...dropped.map((turn, index) => digestOf(turn, firstNumber + index))];
  let omitted = summary.omitted;
  while (lines.length > 0) {
    const text = summaryText({ lines, omitted }) ?? "";
    if ((await countTextTokens(text)) <= maxTokens) break;
    lines.shift();
    omitted += 1;
  }
  return { lines, omitted };
}

/** Tokens of the conversation as rendered into the planner's prompt. */
export async function historyTokens(conversation: Conversation): Promise<number> {
  const text = renderConversation(conversation);
  return text === undefined ? 0 : countTextTokens(text);
}

/**
 * Trims a thread's conversation to `budget` tokens, oldest turns first, with LangChain's
 * `trimMessages` (strategy "last", whole turns: it starts on a person's message): each turn is a
 * person's task and troupe's answer, counted with the tokenizer the run's metrics use. The turns
 * trimmed away become lines of a running summary (by code: number, task, outcome, files), which
 * keeps at most a quarter of the budget (and `summaryMaxTokens`); its oldest lines fold into a
 * count. Summary and turns share the budget: the rendered history is at most `budget` tokens and,
 * once it has filled, stays within one turn of it; budget 0 turns the history off.
 */
export async function trimConversation(conversation: Conversation, budget: number): Promise<TrimmedConversation> {
  if (conversation.turns.length === 0 && summaryText(conversation.summary) === null) return { conversation, dropped: 0, tokens: 0 };
  const summaryBudget = Math.min(CONVERSATION_LIMITS.summaryMaxTokens, Math.floor(budget / 4));
  // The turns get what the summary leaves now, not what it may take once full: with its share held
  // back, the history kept growing for a dozen turns after the budget filled, as the summary did.
  const summaryNow = summaryText(conversation.summary);
  const summaryTokens = summaryNow === null ? 0 : Math.min(summaryBudget, await countTextTokens(summaryNow));
  const turnBudget = Math.max(0, budget - summaryTokens - FRAME_TOKENS);
  const messages = conversation.turns.flatMap((turn, index) => turnMessages(turn, conversation.trimmed + index + 1));
  const kept = turnBudget > 0 ? await trimMessages(messages, { maxTokens: turnBudget, strategy: "last", startOn: "human", tokenCounter: countMessageTokens }) : [];
  // Kept messages are a suffix of whole turns: the first kept task names the first kept turn.
  const firstKept = kept[0]?.id === undefined ? conversation.turns.length : conversation.turns.findIndex((turn) => `${turn.run}:task` === kept[0]?.id);
  let keepFrom = firstKept < 0 ? conversation.turns.length : firstKept;
  let trimmedConversation = await fold(conversation, keepFrom, summaryBudget);
  let tokens = await historyTokens(trimmedConversation);
  // The messages' count and the rendered JSON differ by a few tokens: drop more until the rendering fits.
  while (tokens > budget && keepFrom < conversation.turns.length) {
    keepFrom += 1;
    trimmedConversation = await fold(conversation, keepFrom, summaryBudget);
    tokens = await historyTokens(trimmedConversation);
  }
  if (tokens > budget) {
    // Only the summary is left, and even it does not fit (a budget of a few tokens): keep the count alone.
    trimmedConversation = { ...trimmedConversation, summary: { lines: [], omitted: trimmedConversation.summary.omitted + trimmedConversation.summary.lines.length } };
    tokens = await historyTokens(trimmedConversation);
    if (tokens > budget) {
      trimmedConversation = { ...trimmedConversation, summary: { lines: [], omitted: 0 } };
      tokens = 0;
    }
  }
  return { conversation: trimmedConversation, dropped: keepFrom, tokens };
}

/** The conversation with its first `count` turns folded into the summary. */
async function fold(conversation: Conversation, count: number, summaryBudget: number): Promise<Conversation> {
  if (count === 0) return conversation;
  const dropped = conversation.turns.slice(0, count);
  return {
    turns: conversation.turns.slice(count),
    summary: await foldSummary(conversation.summary, dropped, conversation.trimmed + 1, summaryBudget),
    trimmed: conversation.trimmed + count,
  };
}
