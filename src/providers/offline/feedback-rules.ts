import type { Intent } from "./intent-types.js";

/**
 * A person's feedback on a rejected plan, read by rules: which of the task's clauses to keep
 * ("only the arithmetic", "just the files in data", "the listing only"), which to leave out
 * ("without the listing", "skip result.txt", "don't save it", "no file writes"), and clauses to
 * add ("also count the lines of notes.txt"). A clause is named by the kind of work it is (words
 * for each kind below) or by a file or number its words contain. Feedback these rules cannot read
 * leaves the plan as it was, and the planner says so in its answer.
 */

type Kind = Intent["kind"];

/** The words that name a kind of work, as a person calls it. */
const KIND_WORDS: ReadonlyArray<[RegExp, readonly Kind[]]> = [
  [/^(?:arithmetic|calculations?|calculate|calculating|compute|computing|computations?|maths?|sums?|numbers?|figures?|percentages?)$/, ["compute"]],
  [/^(?:list|listing|listings|directory|directories|folders?)$/, ["list", "map"]],
  [/^(?:read|reading|reads)$/, ["read"]],
  [/^(?:writes?|writing|save|saves|saving|store|storing|record)$/, ["write"]],
  [/^(?:count|counting|counts|statistics|stats)$/, ["count"]],
  [/^(?:json|validation|validate|validating)$/, ["json", "query"]],
  [/^(?:search|searching|searches|lookups?)$/, ["search"]],
  [/^(?:run|running|code|scripts?|execute|execution)$/, ["run"]],
  [/^(?:copy|copying|copies)$/, ["copy"]],
  [/^(?:move|moving|rename|renaming)$/, ["move"]],
  [/^(?:delete|deleting|deletion|deletions|removal)$/, ["delete"]],
  [/^(?:memory|remember|remembering|recall|forget|facts?)$/, ["remember", "recall", "forget"]],
];

/** "files" alone is the work on files: reading, writing, listing, copying… */
const FILE_KINDS: readonly Kind[] = ["read", "write", "list", "map", "copy", "move", "delete", "count"];

const ONLY = /\b(?:only|just|solely|merely)\b/;
const EXCLUDE = /\b(?:without|skip|omit|drop|except|exclude|no|not|don't|dont|never|leave out|instead of)\b/;
const ADD = /^(?:also|and also|additionally|plus|then also|and then)\b[\s,:]*/;

/** What a restriction names: kinds of work, and words (files, numbers) a clause must contain. */
interface Target {
  kinds: Set<Kind>;
  words: Set<string>;
}

/** Where a phrase ends: punctuation (a full stop, not a file name's dot), "but", "please", or a word that turns it around. */
const PHRASE_END = /[,;!?]|\.(?=\s|$)|\b(?:but|please|not|no|without|except)\b/;

/** The words after a trigger, up to the end of the phrase ("only the maths and the saving": both). */
function phraseAfter(sentence: string, trigger: RegExp): string | undefined {
  const match = trigger.exec(sentence);
  if (!match) return undefined;
  return sentence.slice(match.index + match[0].length).split(PHRASE_END)[0]?.trim();
}

/** The words before a trailing "only" ("the listing only"). */
function phraseBefore(sentence: string, trigger: RegExp): string | undefined {
  const match = trigger.exec(sentence);
  if (!match) return undefined;
  return sentence.slice(0, match.index).split(PHRASE_END).at(-1)?.trim();
}

function targetOf(phrase: string | undefined): Target | undefined {
  if (!phrase) return undefined;
  const kinds = new Set<Kind>();
  const words = new Set<string>();
  for (const word of phrase.split(/\s+/).slice(0, 8)) {
    const bare = word.replace(/^["'`(]+|["'`),:;]+$/g, "");
    if (bare === "") continue;
    if (bare === "files" || bare === "file") for (const kind of FILE_KINDS) kinds.add(kind);
    for (const [pattern, named] of KIND_WORDS) if (pattern.test(bare)) for (const kind of named) kinds.add(kind);
    // A file name or a number names the clauses that contain it.
    if (/[./]/.test(bare) && /\w/.test(bare)) words.add(bare);
    else if (/\d/.test(bare) && /^[\d.,^%*/+-]+$/.test(bare)) words.add(bare);
  }
  return kinds.size > 0 || words.size > 0 ? { kinds, words } : undefined;
}

function matches(intent: Intent, target: Target): boolean {
  if (target.kinds.has(intent.kind)) return true;
  const clause = intent.clause.toLowerCase();
  return [...target.words].some((word) => clause.includes(word));
}

/** What feedback asks of a plan: clauses kept and left out, clauses added, and whether any of it could be read. */
export interface FeedbackReading {
  keep: Intent[];
  /** Clauses to add (the words after "also …"), for the planner to read as task clauses. */
  additions: string[];
  /** Whether some feedback was read as a restriction or an addition. */
  understood: boolean;
}

/** The task's clauses as the person's feedback wants them (see the file's comment). */
export function applyFeedback(intents: readonly Intent[], feedback: readonly string[]): FeedbackReading {
  let keep = [...intents];
  const additions: string[] = [];
  let understood = false;
  for (const line of feedback) {
    for (const raw of line.toLowerCase().split(/(?<=[.!?;])\s+/)) {
      const sentence = raw.trim();
      if (sentence === "") continue;
      const added = ADD.exec(sentence);
      if (added) {
        additions.push(sentence.slice(added[0].length).replace(/[.!]+$/, ""));
        understood = true;
        continue;
      }
      const excluded = EXCLUDE.test(sentence) ? targetOf(phraseAfter(sentence, EXCLUDE)) : undefined;
      const only = ONLY.test(sentence) ? (targetOf(phraseAfter(sentence, ONLY)) ?? targetOf(phraseBefore(sentence, ONLY))) : undefined;
      if (excluded) keep = keep.filter((intent) => !matches(intent, excluded));
      if (only) keep = keep.filter((intent) => matches(intent, only));
      if (excluded || only) understood = true;
    }
  }
  return { keep, additions, understood };
}
