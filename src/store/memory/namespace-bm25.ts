/**
 * BM25 with the statistics of one namespace: how rare a word is among the caller's matching
 * facts, not among every key's. SQLite's FTS5 `bm25()` weighs each word by a scan of its whole
 * posting list, every namespace's: a search among 11 facts took 0.5 ms alone and 15.7 ms once
 * a hundred other keys held 100,000 facts, and their facts moved its ranking. FTS5 still decides
 * what matches (porter stemming; its index skips to the namespace's rows); this ranks the
 * matches, from their text (`namespaceBm25`) or from the words a namespace's index keeps
 * (namespace-index.ts), with the same arithmetic (`rankDocuments`).
 */

/** BM25's usual constants (FTS5's too). */
const K1 = 1.2;
const B = 0.75;

/** Endings left off a query word to find the forms porter stemming matched ("reports", "reported" for "report"); three letters at least are kept. */
const ENDINGS = ["ing", "ies", "ied", "es", "ed", "ly", "s", "y", "e"];

/** The start of the words of a fact a query word matched, or the whole word. */
export interface WordStem {
  stem: string;
  whole: boolean;
}

/** The start of the words of a fact a query word (lowercase, as `queryWords` gives it) matched; a word with a digit is matched whole. */
export function wordStem(word: string): WordStem {
  if (/\d/.test(word)) return { stem: word, whole: true };
  for (const ending of ENDINGS) {
    if (word.endsWith(ending) && word.length - ending.length >= 3) return { stem: word.slice(0, -ending.length), whole: false };
  }
  return { stem: word, whole: false };
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** `LETTER_OR_DIGIT.test(text.charAt(index))`, without the regular expression for ASCII. */
function letterOrDigitAt(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  if (code < 128) return (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || (code >= 65 && code <= 90);
  return LETTER_OR_DIGIT.test(text.charAt(index));
}

/** The distinct stems of the query's words, in their order. */
export function stemsOf(words: readonly string[]): WordStem[] {
  return [...new Map(words.map((word) => wordStem(word)).map((stem) => [`${stem.stem}/${stem.whole}`, stem])).values()];
}

/**
 * The words of a lowercase text as `occurrences` sees them: runs of UTF-16 units that are each a
 * letter or a digit. A stem made only of such units occurs at a word's start exactly when it
 * starts one of these words (or is one, when whole), so counts read from them equal the text's.
 */
export function wordsOf(text: string): string[] {
  const words: string[] = [];
  let start = -1;
  for (let index = 0; index <= text.length; index += 1) {
    const inside = index < text.length && letterOrDigitAt(text, index);
    if (inside && start === -1) start = index;
    else if (!inside && start !== -1) {
      words.push(text.slice(start, index));
      start = -1;
    }
  }
  return words;
}

/** Whether a stem's count can be read from `wordsOf` (every unit a letter or a digit: not "_", not half of a surrogate pair). */
export function countableStem({ stem }: WordStem): boolean {
  for (let index = 0; index < stem.length; index += 1) if (!letterOrDigitAt(stem, index)) return false;
  return stem.length > 0;
}

/** How many of the text's words (lowercase) start with the stem (or are it, when whole). */
function occurrences(text: string, { stem, whole }: { stem: string; whole: boolean }): number {
  let times = 0;
  for (let at = text.indexOf(stem); at !== -1; at = text.indexOf(stem, at + stem.length)) {
    const starts = at === 0 || !LETTER_OR_DIGIT.test(text.charAt(at - 1));
    const ends = !whole || at + stem.length === text.length || !LETTER_OR_DIGIT.test(text.charAt(at + stem.length));
    if (starts && ends) times += 1;
  }
  return times;
}

/** Whether a UTF-16 unit of a lowercase text is part of a word: an ASCII letter or digit, or anything past ASCII (counted as a letter: a length needs no more). */
function wordUnit(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || code >= 128;
}

/** How many words a lowercase text has (runs of letters and digits), in one pass without allocating: BM25's length of a fact. */
export function lengthOf(text: string): number {
  let words = 0;
  let inside = false;
  for (let index = 0; index < text.length; index += 1) {
    const unit = wordUnit(text.charCodeAt(index));
    if (unit && !inside) words += 1;
    inside = unit;
  }
  return words;
}

/**
 * BM25 scores of the matched documents (higher is better, in their order), from each one's
 * length and its count of each stem (`counts`, document by document, `stems` a document):
 * `total` the namespace's facts, each stem's rarity counted among the matches (a fact without any
 * of the words has none of them) and the average length the matches'.
 */
export function rankDocuments(lengths: ArrayLike<number>, counts: ArrayLike<number>, stems: number, total: number): Float64Array {
  const documents = lengths.length;
  const count = Math.max(total, documents);
  const rarity = new Float64Array(stems);
  for (let stem = 0; stem < stems; stem += 1) {
    let seen = 0;
    for (let document = 0; document < documents; document += 1) if ((counts[document * stems + stem] as number) > 0) seen += 1;
    rarity[stem] = Math.log(1 + (count - seen + 0.5) / (seen + 0.5));
  }
  let lengthSum = 0;
  for (let document = 0; document < documents; document += 1) lengthSum += lengths[document] as number;
  const averageLength = lengthSum / Math.max(1, documents) || 1;
  const scores = new Float64Array(documents);
  for (let document = 0; document < documents; document += 1) {
    const length = lengths[document] as number;
    let score = 0;
    for (let stem = 0; stem < stems; stem += 1) {
      const times = counts[document * stems + stem] as number;
      score += ((rarity[stem] as number) * times * (K1 + 1)) / (times + K1 * (1 - B + (B * length) / averageLength));
    }
    scores[document] = score;
  }
  return scores;
}

/**
 * Scores of the matches' texts (higher is better, in their order) for the query's `words`: BM25
 * over the namespace, `total` its facts (see `rankDocuments`).
 */
export function namespaceBm25(texts: readonly string[], words: readonly string[], total: number): number[] {
  const stems = stemsOf(words);
  const lengths: number[] = [];
  const counts: number[] = [];
  for (const text of texts) {
    const lower = text.toLowerCase();
    lengths.push(lengthOf(lower));
    for (const stem of stems) counts.push(occurrences(lower, stem));
  }
  return [...rankDocuments(lengths, counts, stems.length, total)];
}
