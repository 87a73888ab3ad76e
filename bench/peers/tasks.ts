import { readFile } from "node:fs/promises";
import path from "node:path";
import { evaluateExpression } from "../../src/tools/math/expression.js";
import { CAPITALS, CURRENCIES, figure, HEADQUARTERS, POPULATIONS, PRICES, RATES, type RoleName, SUPPLIERS } from "./world.js";

/**
 * The peers benchmark's tasks. Each has a scripted solution — steps, each one tool call (or one
 * per item of a list), whose arguments come from literals and from earlier steps' results — that
 * the oracle model follows in every framework, and a check of the final answer and files made
 * from the world's tables directly (not from what any framework passed along).
 */

export const GROUPS = ["simple", "parallel", "map", "chain"] as const;
export type Group = (typeof GROUPS)[number];

/**
 * A step's named input: a literal, or (a field of) an earlier step's result; `each` takes it from
 * every item of a mapped step, `format` makes it text, a line per item (`{field}` an item's field).
 */
export type StepInput = { value: unknown } | { ref: string; field?: string; each?: boolean; format?: string };

export interface Step {
  id: string;
  role: RoleName;
  tool: string;
  /** The instruction, as a planner would write it for a worker. */
  label: string;
  inputs: Record<string, StepInput>;
  /** A list input: the step calls its tool once per item (that input set to the item). */
  mapOver?: string;
  /** The tool's arguments from the inputs' values. */
  call(inputs: Record<string, unknown>): Record<string, unknown>;
  /**
   * The tool's arguments as literals and references, when a planner knows them all (a lookup of a
   * named thing or of an earlier result's field, a calculation of literals): troupe can then run
   * the tool as a direct step, without a worker. Absent when a worker has to make them (an
   * expression over earlier results, a file's text).
   */
  directArgs?: Record<string, StepInput>;
  /**
   * A combination step's direct arguments: a calculation whose variables are earlier results by
   * reference, a write whose content is a reference (formatted into lines for a list). Planned
   * when troupe's plan schema offers it (see plan-writer.ts); a worker's step otherwise.
   */
  combinedArgs?: Record<string, StepInput>;
}

export interface PeerTask {
  id: string;
  group: Group;
  prompt: string;
  steps: Step[];
  /** The final answer from the steps' results. */
  answer(results: Record<string, unknown>): string;
  /** The same answer as a planner states it in advance, with `{s1.price}` where a result goes (troupe's answer template). */
  template: string;
  /** Whether the final answer (and the files in the workspace) are right; a reason when not. */
  check(answer: string, workspace: string): Promise<string | undefined>;
}

const field = <T>(value: unknown, name: string): T => (value as Record<string, T>)[name] as T;

function lookup(id: string, tool: string, key: string, input: StepInput, label: string): Step {
  return { id, role: "lookup", tool, label, inputs: { [key]: input }, call: (inputs) => ({ [key]: inputs[key] }), directArgs: { [key]: input } };
}

/** A calculation; `over` is its expression with the inputs as variables (by name), when it combines earlier results. */
function calculate(id: string, label: string, inputs: Record<string, StepInput>, expression: (inputs: Record<string, unknown>) => string, over?: string): Step {
  const literal = Object.keys(inputs).length === 0;
  return {
    id,
    role: "math",
    tool: "calculate",
    label,
    inputs,
    call: (values) => ({ expression: expression(values) }),
    ...(literal ? { directArgs: { expression: { value: expression({}) } } } : {}),
    ...(over !== undefined ? { combinedArgs: { expression: { value: over }, ...inputs } } : {}),
  };
}

/** A file write; its content, as a planner would hand it over by reference, is `reference` (a format joins a list into lines). */
function save(id: string, file: string, label: string, inputs: Record<string, StepInput>, content: (inputs: Record<string, unknown>) => string, reference: StepInput): Step {
  return { id, role: "files", tool: "write_file", label, inputs: { path: { value: file }, ...inputs }, call: (values) => ({ path: file, content: content(values) }), combinedArgs: { path: { value: file }, content: reference } };
}

const sum = (values: unknown) => (values as number[]).map((value) => String(value)).join(" + ");
const valueOf = (results: Record<string, unknown>, id: string): number => field<number>(results[id], "value");

/** The answer contains the expected figure (or word) as a whole token. */
function says(expected: string): (answer: string) => string | undefined {
  const pattern = new RegExp(`(^|[^0-9.])${expected.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^0-9])`);
  return (answer) => (pattern.test(answer.replace(/(\d),(\d{3})/g, "$1$2")) ? undefined : `the answer does not say ${expected}: ${answer.slice(0, 200)}`);
}

async function fileSays(workspace: string, file: string, expected: string): Promise<string | undefined> {
  const content = await readFile(path.join(workspace, file), "utf8").catch(() => undefined);
  if (content === undefined) return `${file} was not written`;
  return content === expected ? undefined : `${file} holds ${JSON.stringify(content.slice(0, 200))}, not ${JSON.stringify(expected.slice(0, 200))}`;
}

function checks(...parts: Array<(answer: string, workspace: string) => Promise<string | undefined> | string | undefined>): PeerTask["check"] {
  return async (answer, workspace) => {
    for (const part of parts) {
      const problem = await part(answer, workspace);
      if (problem) return problem;
    }
    return undefined;
  };
}

const BASKET = ["widget", "gadget", "gizmo"];
const CITIES = ["Oslo", "Lima", "Hanoi", "Accra", "Quito"];
const EIGHT = ["widget", "gadget", "gizmo", "sprocket", "flange", "bracket", "hinge", "valve"];
const ITEMS = Object.keys(PRICES);
const ALL_CITIES = Object.keys(POPULATIONS);
const total = (values: number[]) => evaluateExpression(values.map(String).join(" + "));

function priceLines(prices: unknown): string {
  return (prices as Array<{ item: string; price: number }>).map((entry) => `${entry.item}: ${entry.price}`).join("\n");
}

export const PEER_TASKS: readonly PeerTask[] = [
  {
    id: "simple-price",
    group: "simple",
    prompt: "What does a widget cost?",
    steps: [lookup("s1", "lookup_price", "item", { value: "widget" }, "Look up the price of a widget")],
    answer: (results) => `A widget costs $${figure(field<number>(results.s1, "price"))}.`,
    template: "A widget costs ${s1.price}.",
    check: checks(says(figure(PRICES.widget ?? 0))),
  },
  {
    id: "simple-percent",
    group: "simple",
    prompt: "Compute 17% of 2,340.",
    steps: [calculate("s1", "Compute 17% of 2,340", {}, () => "2340 * 17 / 100")],
    answer: (results) => `17% of 2,340 is ${figure(valueOf(results, "s1"))}.`,
    template: "17% of 2,340 is {s1.value}.",
    check: checks(says("397.8")),
  },
  {
    id: "simple-save",
    group: "simple",
    prompt: "Compute 17% of 2,340 and save it to result.txt.",
    steps: [
      calculate("s1", "Compute 17% of 2,340", {}, () => "2340 * 17 / 100"),
      save("s2", "result.txt", "Save the result to result.txt", { value: { ref: "s1", field: "value" } }, (inputs) => figure(inputs.value as number), { ref: "s1", field: "value" }),
    ],
    answer: (results) => `17% of 2,340 is ${figure(valueOf(results, "s1"))}; saved to result.txt.`,
    template: "17% of 2,340 is {s1.value}; saved to result.txt.",
    check: checks(says("397.8"), (_answer, workspace) => fileSays(workspace, "result.txt", "397.8")),
  },
  {
    id: "simple-capital",
    group: "simple",
    prompt: "What is the capital of Peru?",
    steps: [lookup("s1", "lookup_capital", "country", { value: "Peru" }, "Look up the capital of Peru")],
    answer: (results) => `The capital of Peru is ${field<string>(results.s1, "capital")}.`,
    template: "The capital of Peru is {s1.capital}.",
    check: checks(says(CAPITALS.Peru ?? "")),
  },
  {
    id: "parallel-basket",
    group: "parallel",
    prompt: `What do a ${BASKET.join(", a ").replace(/, a ([^,]*)$/, " and a $1")} cost together?`,
    steps: [
      ...BASKET.map((item, index) => lookup(`s${index + 1}`, "lookup_price", "item", { value: item }, `Look up the price of a ${item}`)),
      calculate("s4", "Add up the three prices", Object.fromEntries(BASKET.map((item, index) => [item, { ref: `s${index + 1}`, field: "price" }])), (inputs) => sum(BASKET.map((item) => inputs[item])), BASKET.join(" + ")),
    ],
    answer: (results) => `Together they cost $${figure(valueOf(results, "s4"))}.`,
    template: "Together they cost ${s4.value}.",
    check: checks(says(figure(total(BASKET.map((item) => PRICES[item] ?? 0))))),
  },
  {
    id: "parallel-cities",
    group: "parallel",
    prompt: `What is the combined population of ${CITIES.slice(0, -1).join(", ")} and ${CITIES.at(-1)}?`,
    steps: [
      ...CITIES.map((city, index) => lookup(`s${index + 1}`, "lookup_population", "city", { value: city }, `Look up the population of ${city}`)),
      calculate("s6", "Add up the five populations", Object.fromEntries(CITIES.map((city, index) => [city, { ref: `s${index + 1}`, field: "population" }])), (inputs) => sum(CITIES.map((city) => inputs[city])), CITIES.join(" + ")),
    ],
    answer: (results) => `Their combined population is ${figure(valueOf(results, "s6"))}.`,
    template: "Their combined population is {s6.value}.",
    check: checks(says(figure(total(CITIES.map((city) => POPULATIONS[city] ?? 0))))),
  },
  {
    id: "parallel-average",
    group: "parallel",
    prompt: `Look up the prices of the ${EIGHT.join(", ")}; compute their average price and save it to average.txt.`,
    steps: [
      ...EIGHT.map((item, index) => lookup(`s${index + 1}`, "lookup_price", "item", { value: item }, `Look up the price of a ${item}`)),
      calculate("s9", "Compute the average of the eight prices", Object.fromEntries(EIGHT.map((item, index) => [item, { ref: `s${index + 1}`, field: "price" }])), (inputs) => `(${sum(EIGHT.map((item) => inputs[item]))}) / 8`, `round(avg(${EIGHT.join(", ")}), 2)`),
      save("s10", "average.txt", "Save the average price to average.txt", { value: { ref: "s9", field: "value" } }, (inputs) => figure(inputs.value as number), { ref: "s9", field: "value" }),
    ],
    answer: (results) => `The average price is $${figure(valueOf(results, "s9"))}; saved to average.txt.`,
    template: "The average price is ${s9.value}; saved to average.txt.",
    check: (() => {
      const expected = figure(total(EIGHT.map((item) => PRICES[item] ?? 0)) / 8);
      return checks(says(expected), (_answer, workspace) => fileSays(workspace, "average.txt", expected));
    })(),
  },
  {
    id: "map-prices",
    group: "map",
    prompt: `Look up the price of each of these 20 parts and give the total: ${ITEMS.join(", ")}.`,
    steps: [
      { ...lookup("s1", "lookup_price", "item", { value: ITEMS }, "Look up the price of each part"), mapOver: "item" },
      calculate("s2", "Add up the 20 prices", { prices: { ref: "s1", field: "price", each: true } }, (inputs) => sum(inputs.prices), "sum(prices)"),
    ],
    answer: (results) => `The 20 parts cost $${figure(valueOf(results, "s2"))} in total.`,
    template: "The 20 parts cost ${s2.value} in total.",
    check: checks(says(figure(total(ITEMS.map((item) => PRICES[item] ?? 0))))),
  },
  {
    id: "map-populations",
    group: "map",
    prompt: `Look up the population of each of these 20 cities and give their total: ${ALL_CITIES.join(", ")}.`,
    steps: [
      { ...lookup("s1", "lookup_population", "city", { value: ALL_CITIES }, "Look up the population of each city"), mapOver: "city" },
      calculate("s2", "Add up the 20 populations", { populations: { ref: "s1", field: "population", each: true } }, (inputs) => sum(inputs.populations), "sum(populations)"),
    ],
    answer: (results) => `The 20 cities have ${figure(valueOf(results, "s2"))} people in total.`,
    template: "The 20 cities have {s2.value} people in total.",
    check: checks(says(figure(total(ALL_CITIES.map((city) => POPULATIONS[city] ?? 0))))),
  },
  {
    id: "map-report",
    group: "map",
    prompt: `Look up the price of each of these 20 parts and save one line per part, "part: price", to prices.txt: ${ITEMS.join(", ")}.`,
    steps: [
      { ...lookup("s1", "lookup_price", "item", { value: ITEMS }, "Look up the price of each part"), mapOver: "item" },
      save("s2", "prices.txt", 'Save one line per part, "part: price", to prices.txt', { prices: { ref: "s1", each: true } }, (inputs) => priceLines(inputs.prices), { ref: "s1", each: true, format: "{item}: {price}" }),
    ],
    answer: () => "Saved the 20 prices to prices.txt.",
    template: "Saved the 20 prices to prices.txt.",
    check: checks((_answer, workspace) => fileSays(workspace, "prices.txt", ITEMS.map((item) => `${item}: ${PRICES[item]}`).join("\n"))),
  },
  {
    id: "chain-rate",
    group: "chain",
    prompt: "The widget's supplier is based in some country. What are 250 units of that country's currency worth in US dollars?",
    steps: [
      lookup("s1", "lookup_supplier", "item", { value: "widget" }, "Look up the widget's supplier"),
      lookup("s2", "lookup_headquarters", "supplier", { ref: "s1", field: "supplier" }, "Look up the country the supplier is based in"),
      lookup("s3", "lookup_currency", "country", { ref: "s2", field: "country" }, "Look up that country's currency"),
      lookup("s4", "lookup_rate", "currency", { ref: "s3", field: "currency" }, "Look up the currency's rate in US dollars"),
      calculate("s5", "Convert 250 units of the currency to US dollars", { rate: { ref: "s4", field: "usd" } }, (inputs) => `250 * ${inputs.rate}`, "round(250 * rate, 2)"),
    ],
    answer: (results) => `250 units are worth $${figure(valueOf(results, "s5"))}.`,
    template: "250 units are worth ${s5.value}.",
    check: checks(says(figure(250 * (RATES[CURRENCIES[HEADQUARTERS[SUPPLIERS.widget ?? ""] ?? ""] ?? ""] ?? 0)))),
  },
  {
    id: "chain-capital",
    group: "chain",
    prompt: "The gizmo's supplier is based in some country. What is the population of that country's capital, in millions?",
    steps: [
      lookup("s1", "lookup_supplier", "item", { value: "gizmo" }, "Look up the gizmo's supplier"),
      lookup("s2", "lookup_headquarters", "supplier", { ref: "s1", field: "supplier" }, "Look up the country the supplier is based in"),
      lookup("s3", "lookup_capital", "country", { ref: "s2", field: "country" }, "Look up that country's capital"),
      lookup("s4", "lookup_population", "city", { ref: "s3", field: "capital" }, "Look up the capital's population"),
      calculate("s5", "Express the population in millions", { population: { ref: "s4", field: "population" } }, (inputs) => `${inputs.population} / 1000000`, "round(population / 1000000, 2)"),
    ],
    answer: (results) => `The capital has ${figure(valueOf(results, "s5"))} million people.`,
    template: "The capital has {s5.value} million people.",
    check: checks(says(figure((POPULATIONS[CAPITALS[HEADQUARTERS[SUPPLIERS.gizmo ?? ""] ?? ""] ?? ""] ?? 0) / 1_000_000))),
  },
  {
    id: "chain-arithmetic",
    group: "chain",
    prompt: "Compute 2^10, add 3^5 to it, multiply the sum by 2, subtract 100, and save the result to total.txt.",
    steps: [
      calculate("s1", "Compute 2^10", {}, () => "2 ^ 10"),
      calculate("s2", "Add 3^5", { value: { ref: "s1", field: "value" } }, (inputs) => `${inputs.value} + 3 ^ 5`, "value + 3 ^ 5"),
      calculate("s3", "Multiply by 2", { value: { ref: "s2", field: "value" } }, (inputs) => `${inputs.value} * 2`, "value * 2"),
      calculate("s4", "Subtract 100", { value: { ref: "s3", field: "value" } }, (inputs) => `${inputs.value} - 100`, "value - 100"),
      save("s5", "total.txt", "Save the result to total.txt", { value: { ref: "s4", field: "value" } }, (inputs) => figure(inputs.value as number), { ref: "s4", field: "value" }),
    ],
    answer: (results) => `The result is ${figure(valueOf(results, "s4"))}; saved to total.txt.`,
    template: "The result is {s4.value}; saved to total.txt.",
    check: checks(says("2434"), (_answer, workspace) => fileSays(workspace, "total.txt", "2434")),
  },
];

/** The task whose prompt this text is (or starts a line of), if any. */
export function taskOfText(text: string): PeerTask | undefined {
  return PEER_TASKS.find((task) => text.includes(task.prompt));
}
