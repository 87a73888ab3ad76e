/**
 * The offline model's reading of arithmetic in words: a clause that is a computation of its own
 * ("15% of 80 plus 25% of 40", "add 2 and 3"), one that continues the previous result ("then ×2",
 * "double it", "multiply it by 3"), one that combines earlier results ("add them", "the
 * difference", "divide the first by the second"), and one that lists several computations ("2^10
 * and 3^5"). Continuations and combinations are templates over named operands — `{a} * 2`,
 * `{a} - {b}` — that the planner binds to earlier results by reference; the worker fills them
 * from its resolved arguments and calls the calculator. Grammar only: no answers.
 */

/** Which earlier results a computation's template takes. */
export type Operands =
  /** `{a}` is the latest number. */
  | { kind: "previous" }
  /** `{a}` and `{b}` are the first and the second of the last two numbers. */
  | { kind: "pair" }
  /** Every number since the last combination, joined by an operator or passed to a function. */
  | { kind: "all"; join: " + " | " * " }
  | { kind: "all"; call: "avg" | "max" | "min" };

/** A computation that takes earlier results: its template (over `{a}`, `{b}`, …) and which ones. */
export interface Chained {
  expression: string;
  operands: Operands;
}

/** The names of a template's operands, in order: a, b, c, … */
export function operandName(index: number): string {
  return String.fromCharCode("a".charCodeAt(0) + index);
}

/** A template's expression for `count` operands (for `all`); `previous` and `pair` templates are fixed. */
export function expandOperands(chained: Chained, count: number): string {
  const { operands } = chained;
  if (operands.kind !== "all") return chained.expression;
  const names = Array.from({ length: count }, (_, index) => `{${operandName(index)}}`);
  return "join" in operands ? names.join(operands.join) : `${operands.call}(${names.join(", ")})`;
}

const ALLOWED_WORDS = new Set([
  "of", "mod", "sqrt", "cbrt", "abs", "round", "floor", "ceil", "trunc", "min", "max", "sum", "avg", "pow", "exp",
  "ln", "log", "log10", "log2", "sin", "cos", "tan", "asin", "acos", "atan", "pi", "π", "e", "tau",
]);

/** A number as written in a task: 7, 2,340, 0.5, -3. */
const NUMBER = String.raw`-?\d[\d,]*(?:\.\d+)?|-?\.\d+`;
const NUMBER_ONLY = new RegExp(`^(?:${NUMBER})$`);

/** Words that stand for the previous result. */
const PREVIOUS = String.raw`(?:it|that|this|the (?:previous |last )?(?:result|answer|value|number|output|figure))`;

/**
 * Turns words into operators and keeps the clause only if what is left is arithmetic. With
 * `operands`, `{a}`-style placeholders count as numbers (a template); a lone number is not a
 * computation unless `bare` allows it (an operand inside a larger phrase).
 */
export function toExpression(clause: string, options: { operands?: boolean; bare?: boolean } = {}): string | undefined {
  let text = ` ${clause.toLowerCase()} `;
  text = text.replace(/\b(?:please|can you|could you|tell me|for me|exactly|approximately|roughly)\b/g, " ");
  text = text.replace(/^\s*(?:compute|calculate|evaluate|work out|find|determine|get|what(?:'s| is| are)|how much is|solve)\b/, " ");
  text = text.replace(/\b(?:the value of|the result of|the answer to)\b/g, " ");
  text = numbersInWords(text);
  const operand = String.raw`(${NUMBER}|\{[a-z]\}|\([^)]*\))`;
  // "the sum of 2, 3 and 4", "the average of 4 and 8", "add up 1, 2 and 3": a function of a list.
  const list = String.raw`((?:${NUMBER}|\{[a-z]\}|\([^)]*\))(?:\s*,\s+(?:${NUMBER}|\{[a-z]\}|\([^)]*\)))*,?\s+and\s+(?:${NUMBER}|\{[a-z]\}|\([^)]*\)))`;
  const listOf = (items: string, join: string, call?: string): string => {
    const parts = items.split(/\s*,\s+(?:and\s+)?|,?\s+and\s+/);
    return call ? `${call}(${parts.join(", ")})` : `(${parts.join(join)})`;
  };
  text = text.replace(new RegExp(String.raw`\b(?:the )?(sum|total|product|average|mean|maximum|max|largest|minimum|min|smallest) of ${list}`, "g"), (_, word: string, items: string) =>
    /^(?:sum|total)$/.test(word) ? listOf(items, " + ") : word === "product" ? listOf(items, " * ") : listOf(items, ", ", /^(?:average|mean)$/.test(word) ? "avg" : /^(?:maximum|max|largest)$/.test(word) ? "max" : "min"),
  );
  text = text.replace(new RegExp(String.raw`^\s*(?:add|sum|total)(?: up)? ${list}\s*$`), (_, items: string) => listOf(items, " + "));
  text = text.replace(new RegExp(String.raw`\bthe difference between ${operand} and ${operand}`, "g"), "$1 - $2");
  // Imperatives with two operands: "add 2 to 3", "multiply 6 by 7", "divide 10 by 4", "subtract 3 from 10".
  text = text.replace(new RegExp(String.raw`^\s*add ${operand} to ${operand}\s*$`), "$1 + $2");
  text = text.replace(new RegExp(String.raw`^\s*multiply ${operand} (?:by|and) ${operand}\s*$`), "$1 * $2");
  text = text.replace(new RegExp(String.raw`^\s*divide ${operand} by ${operand}\s*$`), "$1 / $2");
  text = text.replace(new RegExp(String.raw`^\s*subtract ${operand} from ${operand}\s*$`), "$2 - $1");
  text = text.replace(/\b(?:the )?square root of\s+([\d.,]+|\{[a-z]\}|\([^)]*\))/g, "sqrt($1)");
  text = text.replace(/\b(?:the )?cube root of\s+([\d.,]+|\{[a-z]\}|\([^)]*\))/g, "cbrt($1)");
  text = text.replace(/\bhalf of\s+/g, "0.5 * ");
  text = text.replace(/\btwice\s+/g, "2 * ");
  text = text
    .replace(/\bper ?cent\b/g, "%")
    .replace(/\bplus\b/g, "+")
    .replace(/\bminus\b/g, "-")
    .replace(/\b(?:multiplied by|times)\b/g, "*")
    .replace(/\b(?:divided by|over)\b/g, "/")
    .replace(/\b(?:to the power of|raised to(?: the power of)?)\b/g, "^")
    .replace(/\bsquared\b/g, "^2")
    .replace(/\bcubed\b/g, "^3")
    .replace(/\bmodulo\b/g, "mod")
    // "3 x 4": an x between numbers is a multiplication sign.
    .replace(/(\d|\)|\})\s*x\s*(?=[\d(])/g, "$1 * ");
  text = text.replace(/\bthe\b/g, " ").replace(/[?=]+\s*$/g, " ").replace(/\s+/g, " ").trim();
  // Placeholders are operands; they are checked as if they were numbers.
  const checked = options.operands ? text.replace(/\{[a-z]\}/g, "1") : text;
  if (!/\d/.test(checked)) return undefined;
  const words = checked.match(/[a-zπ_]+/g) ?? [];
  if (words.some((word) => !ALLOWED_WORDS.has(word))) return undefined;
  if (!/^[\d\s.,+\-*/^%()!a-zπ_×÷−]+$/.test(checked)) return undefined;
  if (/^[\d.,\s]+$/.test(checked) && !(options.bare && NUMBER_ONLY.test(checked))) return undefined;
  // "×2", "/ 4", "^2": an operator with nothing on its left continues an earlier result.
  if (/^(?:[*×/÷^]|mod\b)/.test(checked)) return undefined;
  return text;
}

const UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"];
const TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];

/** Numbers written as words, up to ninety-nine, and a hundred or a thousand: "times two" → "times 2". */
function numbersInWords(text: string): string {
  const unit = UNITS.slice(1, 10).join("|");
  return text
    .replace(new RegExp(String.raw`\b(${TENS.slice(2).join("|")})[- ](${unit})\b`, "g"), (_, tens: string, ones: string) => String(TENS.indexOf(tens) * 10 + UNITS.indexOf(ones)))
    .replace(new RegExp(String.raw`\b(${[...UNITS, ...TENS.slice(2)].join("|")})\b`, "g"), (word: string) => String(UNITS.includes(word) ? UNITS.indexOf(word) : TENS.indexOf(word) * 10))
    .replace(/\ba (hundred|thousand)\b/g, (_, word: string) => (word === "hundred" ? "100" : "1000"));
}

/** An operand phrase as an expression: a number or arithmetic, parenthesised when it is more than one term. */
function operandExpression(phrase: string): string | undefined {
  const expression = toExpression(phrase, { bare: true });
  if (expression === undefined) return undefined;
  return NUMBER_ONLY.test(expression) || /^[a-z]+\(.*\)$/.test(expression) ? expression : `(${expression})`;
}

/** Words before a continuation that add nothing: "then", "and", "take", "compute". */
function core(clause: string): string {
  return clause
    .toLowerCase()
    .replace(/[.!?]+\s*$/, "")
    .replace(/^\s*(?:and\s+|then\s+|finally\s+|next\s+|also\s+)+/, "")
    .replace(/^\s*(?:compute|calculate|evaluate|work out|find|get|give me|what(?:'s| is))\s+/, "")
    .replace(/\s+/g, " ")
    .trim();
}

/** One-operand verbs: "double it", "halve the result", "square it", "take its square root". */
const UNARY: Array<[RegExp, string]> = [
  [new RegExp(`^(?:double|twice)(?: ${PREVIOUS})?$`), "{a} * 2"],
  [new RegExp(`^triple(?: ${PREVIOUS})?$`), "{a} * 3"],
  [new RegExp(`^(?:halve(?: ${PREVIOUS})?|half (?:of )?${PREVIOUS})$`), "{a} / 2"],
  [new RegExp(`^square(?: ${PREVIOUS})?$`), "{a} ^ 2"],
  [new RegExp(`^cube(?: ${PREVIOUS})?$`), "{a} ^ 3"],
  [new RegExp(`^negate(?: ${PREVIOUS})?$`), "-({a})"],
  [new RegExp(`^(?:take )?(?:the |its )?square root(?: of ${PREVIOUS})?$`), "sqrt({a})"],
  [new RegExp(`^(?:take )?(?:the |its )?cube root(?: of ${PREVIOUS})?$`), "cbrt({a})"],
  [new RegExp(`^(?:take )?(?:the |its )?absolute value(?: of ${PREVIOUS})?$`), "abs({a})"],
  [new RegExp(`^round(?: ${PREVIOUS})?(?: to (?:the )?(?:nearest )?(?:whole number|integer))?$`), "round({a})"],
];

/** One-operand verbs with an amount: "multiply it by 3", "add 5 to it", "increase it by 10%". */
const WITH_AMOUNT: Array<[RegExp, (amount: string) => string | undefined]> = [
  [new RegExp(`^multiply (?:${PREVIOUS} )?by (.+)$`), (amount) => `{a} * ${amount}`],
  [new RegExp(`^divide (?:${PREVIOUS} )?by (.+)$`), (amount) => `{a} / ${amount}`],
  [new RegExp(`^add (.+?) to ${PREVIOUS}$`), (amount) => `{a} + ${amount}`],
  [new RegExp(`^subtract (.+?) from ${PREVIOUS}$`), (amount) => `{a} - ${amount}`],
  [new RegExp(`^(?:increase|raise) (?:${PREVIOUS} )?by (.+)%$`), (amount) => `{a} * (1 + ${amount} / 100)`],
  [new RegExp(`^(?:decrease|reduce|lower) (?:${PREVIOUS} )?by (.+)%$`), (amount) => `{a} * (1 - ${amount} / 100)`],
  [new RegExp(`^(?:increase) (?:${PREVIOUS} )?by (.+)$`), (amount) => `{a} + ${amount}`],
  [new RegExp(`^(?:decrease|reduce|lower) (?:${PREVIOUS} )?by (.+)$`), (amount) => `{a} - ${amount}`],
  [new RegExp(`^raise (?:${PREVIOUS} )?to the power of (.+)$`), (amount) => `{a} ^ ${amount}`],
  [new RegExp(`^round (?:${PREVIOUS} )?to (\\d+) (?:decimal places?|decimals?|places?|digits?)$`), (amount) => `round({a}, ${amount})`],
  [new RegExp(`^(?:take )?(.+%) of ${PREVIOUS}$`), (amount) => `${amount} of {a}`],
  // "then add 10", "then subtract 4": the amount alone, added to or taken from the previous result.
  [/^add (.+)$/, (amount) => `{a} + ${amount}`],
  [/^subtract (.+)$/, (amount) => `{a} - ${amount}`],
];

/**
 * A continuation whose amount is not arithmetic but a figure the task has to find first — "multiply
 * it by the number of lines in log.txt", "add the number of users in users.json to it" — as its
 * template over the previous result `{a}` and the figure `{b}`, and the words of the figure.
 */
export function figureContinuation(clause: string): { template: string; figure: string } | undefined {
  const text = core(clause);
  for (const [pattern, build] of WITH_AMOUNT) {
    const amount = pattern.exec(text)?.[1];
    if (amount === undefined || amount.endsWith("%") || operandExpression(amount) !== undefined) continue;
    const template = build("{b}");
    if (template !== undefined) return { template, figure: amount };
  }
  return undefined;
}

/** The operators a continuation may start with ("×2", "times 3", "minus 4", "squared"). */
const LEADING_OPERATOR = /^(?:[*×/÷^+]|[-−]\s|x(?=\s*\d)|(?:plus|minus|times|multiplied by|divided by|over|to the power of|raised to|squared|cubed|mod|modulo)\b)/;

/** A clause that continues from the previous result, as a template over `{a}`, or undefined. */
export function continuation(clause: string): Chained | undefined {
  const text = core(clause);
  for (const [pattern, template] of UNARY) if (pattern.test(text)) return { expression: template, operands: { kind: "previous" } };
  for (const [pattern, build] of WITH_AMOUNT) {
    const amount = pattern.exec(text)?.[1];
    if (amount === undefined) continue;
    const operand = amount.endsWith("%") ? amount : operandExpression(amount);
    const expression = operand === undefined ? undefined : build(operand);
    if (expression !== undefined) return { expression, operands: { kind: "previous" } };
  }
  // "it times 3 plus 1", "the result squared": the previous result inside arithmetic.
  const named = text.replace(new RegExp(`\\b${PREVIOUS}\\b`, "g"), "{a}");
  const template = LEADING_OPERATOR.test(named) ? `{a} ${named}` : named;
  if (!template.includes("{a}")) return undefined;
  const expression = toExpression(template, { operands: true });
  return expression === undefined ? undefined : { expression, operands: { kind: "previous" } };
}

/** Words for several earlier results: them, both, the two, the results, all three. */
const SEVERAL = String.raw`(?:them(?: all)?|these|those|both(?: of them)?|all(?: of them| three| four)?|the (?:two|three|four)(?: (?:results|numbers|values))?|the (?:results|numbers|values|answers))`;

/** Clauses that combine earlier results, and how. */
const COMBINATIONS: Array<[RegExp, Chained]> = [
  [new RegExp(`^(?:add|sum|total) (?:up )?${SEVERAL}(?: up| together)?$`), { expression: "", operands: { kind: "all", join: " + " } }],
  [new RegExp(`^(?:the )?(?:sum|total)(?: of ${SEVERAL})?$`), { expression: "", operands: { kind: "all", join: " + " } }],
  [new RegExp(`^multiply ${SEVERAL}(?: together)?$`), { expression: "", operands: { kind: "all", join: " * " } }],
  [new RegExp(`^(?:the )?product(?: of ${SEVERAL})?$`), { expression: "", operands: { kind: "all", join: " * " } }],
  [new RegExp(`^(?:average ${SEVERAL}|(?:the )?(?:average|mean)(?: of ${SEVERAL})?)$`), { expression: "", operands: { kind: "all", call: "avg" } }],
  [new RegExp(`^(?:the )?(?:larger|largest|bigger|biggest|greater|greatest|maximum|max|highest)(?: of ${SEVERAL})?$`), { expression: "", operands: { kind: "all", call: "max" } }],
  [new RegExp(`^(?:the )?(?:smaller|smallest|lesser|least|minimum|min|lowest)(?: of ${SEVERAL})?$`), { expression: "", operands: { kind: "all", call: "min" } }],
  [new RegExp(`^(?:subtract ${SEVERAL}|subtract the second from the first|(?:the )?difference(?: (?:between|of) ${SEVERAL})?)$`), { expression: "{a} - {b}", operands: { kind: "pair" } }],
  [/^subtract the first from the second$/, { expression: "{b} - {a}", operands: { kind: "pair" } }],
  [new RegExp(`^(?:divide the first by the second|(?:the )?(?:ratio|quotient)(?: (?:of|between) ${SEVERAL}| of the first to the second)?)$`), { expression: "{a} / {b}", operands: { kind: "pair" } }],
  [/^divide the second by the first$/, { expression: "{b} / {a}", operands: { kind: "pair" } }],
  [/^multiply the first by the second$/, { expression: "{a} * {b}", operands: { kind: "pair" } }],
  [/^(?:express the first as a percentage of the second|what percent(?:age)? of the second is the first|the first as a percentage of the second)$/, { expression: "{a} / {b} * 100", operands: { kind: "pair" } }],
];

/** A clause that combines earlier results ("add them", "the difference"), or undefined. */
export function combination(clause: string): Chained | undefined {
  const text = core(clause);
  return COMBINATIONS.find(([pattern]) => pattern.test(text))?.[1];
}

/** The combination a noun names inside another clause: "save the total to t.txt" → a sum. */
export function combinationNoun(clause: string): Chained | undefined {
  const noun = /\bthe (sum|total|product|average|mean|difference|ratio|quotient|maximum|minimum|largest|smallest)\b/i.exec(clause)?.[1];
  return noun ? combination(`the ${noun.toLowerCase()}`) : undefined;
}

/**
 * A clause that lists several computations — "compute 2^10 and 3^5", "what are 15% of 80 and
 * 25% of 40" — as one expression per computation, or undefined when it is not exactly that.
 */
export function computations(clause: string): Array<{ part: string; expression: string }> | undefined {
  if (toExpression(clause) !== undefined) return undefined;
  const body = clause
    .replace(/[.!?]+\s*$/, "")
    .replace(/^\s*(?:compute|calculate|evaluate|work out|find|determine|what(?:'s| is| are)|how much (?:is|are))\s+/i, "");
  // A comma followed by a space separates computations; one inside a number (2,340) does not.
  const parts = body.split(/\s*,\s+(?:and\s+)?|\s+and\s+/i).filter((part) => part.trim() !== "");
  if (parts.length < 2) return undefined;
  const found = parts.map((part) => ({ part: part.trim(), expression: toExpression(part) }));
  return found.every((entry) => entry.expression !== undefined) ? (found as Array<{ part: string; expression: string }>) : undefined;
}
