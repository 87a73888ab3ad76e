/**
 * How the offline planner reads the earlier turns of a thread (the `## Conversation` section):
 * a follow-up's "that file" is the file the conversation last wrote, and its "it", "the result",
 * "both" or "the total" are the values the latest turn produced, taken back from the stash by a
 * `thread_result` step. These are rules about words and the conversation's shape — never about
 * particular tasks — and when the conversation holds nothing a reference can mean, the clause is
 * left for a language model as before.
 */

import type { ConversationView, TurnResult } from "../../core/conversation.js";
import type { Intent } from "./intent-types.js";

/** A result of an earlier turn, with the turn it came from. */
export interface EarlierResult {
  turn: number;
  result: TurnResult;
}

/** What a clause referring back needs from the conversation: the latest value, or several values, or several numbers. */
export type EarlierNeed = "latest" | "values" | "numbers";

const FILE_PATH = /(?:^|[\s"'`(])((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,10})(?=$|[\s"'`),;:!?])/;
/** "that file", "the same file", "this file", and "the file" (only when the task names no file of its own). */
const THAT_FILE = /\b(?:that|this|the\s+same|the\s+last)\s+file\b/gi;
const THE_FILE = /\bthe\s+file\b/gi;
/** A file verb whose object is "it": "read it", "delete it", "copy it to b.txt", "count the words in it". */
const FILE_VERB_IT = /(^|[.;!?]\s*|,\s*|\band\s+|\bthen\s+)(read|open|show|display|print|cat|delete|remove|copy|duplicate|move|rename)\s+it\b/gi;
const COUNT_IN_IT = /(\b(?:count|how\s+many)\b[^.;!?]*?\b(?:in|of)\s+)it\b/gi;

/** The earlier turns of a thread, as the offline planner uses them. */
export class EarlierTurns {
  readonly #turns: ConversationView["turns"];

  constructor(history: ConversationView | undefined) {
    this.#turns = history?.turns ?? [];
  }

  get empty(): boolean {
    return this.#turns.length === 0;
  }

  /** The file the conversation wrote last, if any. */
  lastFile(): string | undefined {
    for (const turn of [...this.#turns].reverse()) {
      const file = turn.files.at(-1);
      if (file) return file;
    }
    return undefined;
  }

  /**
   * The task with its references to an earlier file spelled out: "that file" (and "it" as the
   * object of a file verb) becomes the path the conversation wrote last — but only where the task
   * has not named a file of its own before the reference, which would be what it means.
   */
  resolveFiles(task: string): string {
    const file = this.lastFile();
    if (!file) return task;
    const unnamedBefore = (text: string, offset: number): boolean => !FILE_PATH.test(text.slice(0, offset));
    let resolved = task.replace(THAT_FILE, (match, offset: number, text: string) => (unnamedBefore(text, offset) ? file : match));
    if (!FILE_PATH.test(task)) resolved = resolved.replace(THE_FILE, file);
    resolved = resolved.replace(FILE_VERB_IT, (match, lead: string, verb: string, offset: number, text: string) => (unnamedBefore(text, offset) ? `${lead}${verb} ${file}` : match));
    resolved = resolved.replace(COUNT_IN_IT, (match, head: string, offset: number, text: string) => (unnamedBefore(text, offset) ? `${head}${file}` : match));
    return resolved;
  }

  /** Results of a turn that are values (not reports of files written), in order. */
  #values(turn: ConversationView["turns"][number]): EarlierResult[] {
    return turn.results.filter((result) => !result.wrote).map((result) => ({ turn: turn.turn, result }));
  }

  /** The value the latest turn that produced one ended with. */
  latest(): EarlierResult | undefined {
    for (const turn of [...this.#turns].reverse()) {
      const value = this.#values(turn).at(-1);
      if (value) return value;
    }
    return undefined;
  }

  /** Every value of the latest turn that produced any ("save both"). */
  values(): EarlierResult[] {
    for (const turn of [...this.#turns].reverse()) {
      const values = this.#values(turn);
      if (values.length > 0) return values;
    }
    return [];
  }

  /**
   * Numbers to combine ("add them", "the total"): the numbers of the latest turn when it has two
   * or more, else the last number of each of the two latest turns that ended with one.
   */
  numbers(): EarlierResult[] {
    const numeric = (entry: EarlierResult): boolean => entry.result.shape === "number";
    for (const turn of [...this.#turns].reverse()) {
      const numbers = this.#values(turn).filter(numeric);
      if (numbers.length >= 2) return numbers;
      if (this.#values(turn).length > 0) break;
    }
    const finals: EarlierResult[] = [];
    for (const turn of [...this.#turns].reverse()) {
      const last = this.#values(turn).filter(numeric).at(-1);
      if (last) finals.unshift(last);
      if (finals.length === 2) break;
    }
    return finals;
  }

  /** What a clause that refers back needs, or undefined when it refers to nothing earlier. */
  static need(intent: Intent, combination: boolean): EarlierNeed | undefined {
    switch (intent.kind) {
      case "compute":
        if (!intent.chained) return undefined;
        return intent.chained.operands.kind === "previous" ? "latest" : "numbers";
      case "write":
        if (intent.content !== undefined || !intent.usesPrevious) return undefined;
        if (combination) return "numbers";
        return intent.several ? "values" : "latest";
      case "previous":
        return "latest";
      case "json":
        return "previous" in intent.source ? "latest" : undefined;
      default:
        return undefined;
    }
  }
}
