import type { Chained } from "./arithmetic.js";

export type JsonSource = { text: string } | { path: string } | { previous: true };

export type CountUnit = "lines" | "words" | "characters";

/** A comparison in a question about JSON data: "city is Paris", "age over 30", "has an email". */
export interface Condition {
  /** The field as the task names it ("city", "first name"); matched against the data's keys. */
  field: string;
  operator: "==" | "!=" | ">" | ">=" | "<" | "<=" | "exists";
  value?: string | number | boolean | null;
}

/** A question about the records of a JSON file, read from its words. */
export interface JsonQuestion {
  /** How many records match, rather than which. */
  count: boolean;
  /** The field whose values are asked for ("the names of …"); none: the records themselves. */
  field?: string;
  /** The field was named in the singular ("the email of the user …"): one value is expected. */
  singular: boolean;
  /** The records' noun ("users"), which names the list they are in. */
  collection?: string;
  conditions: Condition[];
  /** A figure over the values: "the average age", "the total price". */
  aggregate?: "avg" | "sum" | "max" | "min";
}

export type Intent =
  | { kind: "compute"; clause: string; expression: string; usesPrevious: boolean; chained?: Chained }
  | { kind: "write"; clause: string; path: string; content?: string; usesPrevious: boolean; several?: boolean }
  | { kind: "read"; clause: string; path: string; usesPrevious: false }
  | { kind: "list"; clause: string; path: string; recursive: boolean; usesPrevious: false }
  | { kind: "json"; clause: string; source: JsonSource; usesPrevious: boolean }
  | { kind: "query"; clause: string; path: string; question: JsonQuestion; usesPrevious: false }
  | { kind: "count"; clause: string; unit: CountUnit; path?: string; usesPrevious: false }
  | { kind: "map"; clause: string; folder: string; action: string; usesPrevious: false }
  | { kind: "search"; clause: string; query: string; usesPrevious: false }
  | { kind: "run"; clause: string; language: "javascript" | "python" | "node"; code?: string; path?: string; usesPrevious: false }
  | { kind: "copy"; clause: string; from: string; to: string; usesPrevious: false }
  | { kind: "move"; clause: string; from: string; to: string; usesPrevious: false }
  | { kind: "delete"; clause: string; path: string; recursive: boolean; usesPrevious: false }
  | { kind: "open"; clause: string; agent: "research" | "code"; usesPrevious: boolean }
  /** "remember that X is Y": a fact for long-term memory, with what it is about when the words say. */
  | { kind: "remember"; clause: string; fact: string; subject?: string; usesPrevious: false }
  /** "what is X?", "what do you know about X": a question long-term memory may answer. */
  | { kind: "recall"; clause: string; query: string; usesPrevious: false }
  /** "forget what you know about X": the best matching fact in long-term memory, forgotten. */
  | { kind: "forget"; clause: string; query: string; usesPrevious: false }
  /** "what was the result?", "what is it?": the latest value, from this task or an earlier turn. */
  | { kind: "previous"; clause: string; usesPrevious: true };

/** What a worker's clause is about when it names no file itself: the file it was given as an argument. */
export interface ClauseContext {
  path?: string;
}
