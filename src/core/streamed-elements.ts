import { JsonScanner } from "./json-scan.js";

/**
 * Reads a JSON object as it streams in and hands over each element of one of its top-level
 * lists (`{"steps": [ {…}, {…}, …`) the moment the element is complete, so work can start on
 * the first subtasks of a plan while the model still writes the rest. Feed it the text as it
 * grows; it scans each character once (json-scan.ts) and never parses a partial element.
 */
export class StreamedElements {
  readonly #keys: readonly string[];
  readonly #scanner = new JsonScanner();
  #text = "";
  #position = 0;
  /** The last string read at depth 1, and whether a ':' followed it (so it is a key). */
  #lastString: string | undefined;
  #stringStart = -1;
  #currentKey: string | undefined;
  #inList = false;
  #elementStart = -1;
  #elements = 0;

  /** `keys`: the top-level lists whose elements are handed over (the plan's `steps`, or `subtasks` in its internal shape). */
  constructor(...keys: string[]) {
    this.#keys = keys;
  }

  /** How many elements have been handed over. */
  get count(): number {
    return this.#elements;
  }

  /** Adds streamed text and returns the elements completed by it, parsed. */
  push(text: string): unknown[] {
    this.#text += text;
    const found: unknown[] = [];
    for (; this.#position < this.#text.length; this.#position += 1) {
      const char = this.#text[this.#position] as string;
      // The depth before this character: a closing bracket is judged at the depth it closes.
      const depth = this.#scanner.depth;
      switch (this.#scanner.read(char)) {
        case "quote":
          this.#stringStart = this.#position;
          break;
        case "unquote":
          if (depth === 1) this.#lastString = this.#text.slice(this.#stringStart + 1, this.#position);
          break;
        case "colon":
          if (depth === 1) this.#currentKey = this.#lastString;
          break;
        case "open":
          if (depth === 1 && char === "[" && this.#currentKey !== undefined && this.#keys.includes(this.#currentKey)) this.#inList = true;
          else if (depth === 2 && this.#inList) this.#elementStart = this.#position;
          break;
        case "close":
          if (depth === 3 && this.#inList && this.#elementStart >= 0) {
            const slice = this.#text.slice(this.#elementStart, this.#position + 1);
            this.#elementStart = -1;
            try {
              found.push(JSON.parse(slice));
              this.#elements += 1;
            } catch {
              // not JSON after all: the whole answer is read and judged when it is complete
            }
          }
          if (depth === 2 && this.#inList) this.#inList = false;
          break;
        default:
          break;
      }
    }
    return found;
  }
}
