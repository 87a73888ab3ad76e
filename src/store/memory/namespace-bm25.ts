/**
 * BM25 with the statistics of one namespace: how rare a word is among the caller's matching
 * facts, not among every key's. SQLite's FTS5 `bm25()` weighs each word by a scan of its whole
 * posting list, every namespace's: a search among 11 facts took 0.5 ms alone and 15.7 ms once
 * a hundred other keys held 100,000 facts, and their facts moved its ranking. FTS5 still decides
 * what matches (porter stemming; its index skips to the namespace's rows); this ranks the
 * matches from their text, in one pass over each.
 */

/** BM25's usual constants (FTS5's too). */
const K1 = 1.2;
const B = 0.75;

/** Endings left off a query word to find the forms porter stemming matched ("reports", "reported" for "report"); three letters at least are kept. */
const ENDINGS = ["ing", "ies", "ied", "es", "ed", "ly", "s", "y", "e"];

/** The start of the words of a fact a query word (lowercase, as `queryWords` gives it) matched; a word with a digit is matched whole. */
export function wordStem(word: string): { stem: string; whole: boolean } {
  if (/\d/.test(word)) return { stem: word, whole: true };
  for (const ending of ENDINGS) {
    if (word.endsWith(ending) && word.length - ending.length >= 3) return { stem: word.slice(0, -ending.length), whole: false };
  }
  return { stem: word, whole: false };
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

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

/** How many words a lowercase text has (runs of letters and digits), in one pass without allocating. */
function lengthOf(text: string): number {
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
 * Scores of the matches' texts (higher is better, in their order) for the query's `words`: BM25
 * over the namespace, `total` its facts, each word's rarity counted among the matches (a fact
 * without any of the words has none of them) and the average length the matches'.
 */
export function namespaceBm25(texts: readonly string[], words: readonly string[], total: number): number[] {
  const stems = [...new Map(words.map((word) => wordStem(word)).map((stem) => [`${stem.stem}/${stem.whole}`, stem])).values()];
  const documents = texts.map((text) => {
    const lower = text.toLowerCase();
    return { length: lengthOf(lower), counts: stems.map((stem) => occurrences(lower, stem)) };
  });
  const count = Math.max(total, documents.length);
  const rarity = stems.map((_, index) => {
    const seen = documents.filter((document) => (document.counts[index] ?? 0) > 0).length;
    return Math.log(1 + (count - seen + 0.5) / (seen + 0.5));
  });
  const averageLength = documents.reduce((sum, document) => sum + document.length, 0) / Math.max(1, documents.length) || 1;
  return documents.map((document) =>
    document.counts.reduce((score, times, index) => score + ((rarity[index] ?? 0) * times * (K1 + 1)) / (times + K1 * (1 - B + (B * document.length) / averageLength)), 0),
  );
}
