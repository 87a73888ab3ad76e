import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { evaluateExpression } from "../../src/tools/math/expression.js";
import { bindVariables } from "../../src/tools/math/variables.js";

/**
 * The peers benchmark's world: small lookup tables, and the tools every framework gets over them
 * (lookups with a fixed delay, a calculator, a file write into the run's workspace). Each tool is
 * defined once here and adapted to each framework's tool interface (see tool-adapters.ts).
 */

export const PRICES: Readonly<Record<string, number>> = {
  widget: 12.5, gadget: 7.25, gizmo: 3.1, sprocket: 0.85, flange: 4.4, bracket: 2.15, hinge: 1.9, valve: 18.6, nozzle: 5.35, gasket: 0.6,
  bearing: 9.8, pulley: 14.2, spring: 0.45, washer: 0.05, rivet: 0.12, clamp: 3.75, coupling: 11.3, spindle: 22.4, lever: 6.65, ratchet: 16.9,
};

export const POPULATIONS: Readonly<Record<string, number>> = {
  Oslo: 709_037, Lima: 10_151_200, Hanoi: 8_435_700, Accra: 2_557_000, Quito: 2_800_388, Bern: 146_159, Nairobi: 4_397_073, Manila: 1_846_513, Lisbon: 548_703,
  Prague: 1_357_326, Dublin: 592_713, Ottawa: 1_017_449, Canberra: 456_692, Santiago: 6_903_479, Cairo: 10_230_350, Seoul: 9_411_000, Warsaw: 1_861_975,
  Helsinki: 674_500, Vienna: 2_005_760, Madrid: 3_416_771,
};

export const CAPITALS: Readonly<Record<string, string>> = {
  Norway: "Oslo", Peru: "Lima", Vietnam: "Hanoi", Ghana: "Accra", Ecuador: "Quito", Switzerland: "Bern", Kenya: "Nairobi", Portugal: "Lisbon", Czechia: "Prague", Chile: "Santiago",
};

export const SUPPLIERS: Readonly<Record<string, string>> = { widget: "Nordvik Industri", gadget: "Andes Metal", gizmo: "Vltava Works", sprocket: "Tejo Fabril" };
export const HEADQUARTERS: Readonly<Record<string, string>> = { "Nordvik Industri": "Norway", "Andes Metal": "Chile", "Vltava Works": "Czechia", "Tejo Fabril": "Portugal" };
export const CURRENCIES: Readonly<Record<string, string>> = { Norway: "NOK", Chile: "CLP", Czechia: "CZK", Portugal: "EUR", Switzerland: "CHF", Kenya: "KES" };
/** US dollars per unit. */
export const RATES: Readonly<Record<string, number>> = { NOK: 0.094, CLP: 0.00106, CZK: 0.0431, EUR: 1.08, CHF: 1.12, KES: 0.0077 };

export type RoleName = "lookup" | "math" | "files";

/** A worker role: the same name, description, instructions and tools in every framework. */
export interface Role {
  name: RoleName;
  description: string;
  instructions: string;
  tools: readonly string[];
}

export const ROLES: readonly Role[] = [
  {
    name: "lookup",
    description: "looks facts up: prices of parts, populations of cities, capitals, suppliers and where they are based, currencies and exchange rates",
    instructions: "Look up the facts asked for with your tools, several at once when they are independent, and report each result.",
    tools: ["lookup_price", "lookup_population", "lookup_capital", "lookup_supplier", "lookup_headquarters", "lookup_currency", "lookup_rate"],
  },
  { name: "math", description: "does arithmetic with a calculator", instructions: "Compute with the calculator tool and report the result.", tools: ["calculate"] },
  { name: "files", description: "writes files in the workspace", instructions: "Write the files asked for and report what was written.", tools: ["write_file"] },
];

/** Simulated latencies of the tools, in milliseconds (the same for every framework). */
export interface ToolLatencies {
  lookupMs: number;
  calculateMs: number;
  writeMs: number;
}

export const BENCH_LATENCIES: ToolLatencies = { lookupMs: 50, calculateMs: 0, writeMs: 5 };
export const NO_LATENCIES: ToolLatencies = { lookupMs: 0, calculateMs: 0, writeMs: 0 };

/** One tool of the world, before it is adapted to a framework. */
export interface WorldTool {
  name: string;
  description: string;
  schema: z.ZodObject<Record<string, z.ZodType>>;
  role: RoleName;
  writes: boolean;
  latency: (latencies: ToolLatencies) => number;
  /** The tool's value; throws for what it cannot do. */
  run(args: Record<string, unknown>, workspace: string): Promise<unknown>;
}

const sleep = (ms: number) => (ms > 0 ? new Promise<void>((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

function lookupTool<Value>(name: string, description: string, key: string, table: Readonly<Record<string, Value>>, field: string): WorldTool {
  return {
    name,
    description,
    schema: z.object({ [key]: z.string().min(1).max(200) }),
    role: "lookup",
    writes: false,
    latency: (latencies) => latencies.lookupMs,
    run: async (args) => {
      const wanted = String(args[key]);
      const found = Object.entries(table).find(([known]) => known.toLowerCase() === wanted.trim().toLowerCase());
      if (!found) throw new Error(`no ${field} is known for "${wanted}"`);
      return { [key]: found[0], [field]: found[1] };
    },
  };
}

/** A workspace path that stays inside the workspace, or an error. */
function inside(workspace: string, file: string): string {
  const resolved = path.resolve(workspace, file);
  if (path.isAbsolute(file) || !resolved.startsWith(`${path.resolve(workspace)}${path.sep}`)) throw new Error(`"${file}" is outside the workspace`);
  return resolved;
}

export const WORLD_TOOLS: readonly WorldTool[] = [
  lookupTool("lookup_price", "The price of a part, in US dollars.", "item", PRICES, "price"),
  lookupTool("lookup_population", "The population of a city.", "city", POPULATIONS, "population"),
  lookupTool("lookup_capital", "The capital city of a country.", "country", CAPITALS, "capital"),
  lookupTool("lookup_supplier", "The company that supplies a part.", "item", SUPPLIERS, "supplier"),
  lookupTool("lookup_headquarters", "The country a supplier is based in.", "supplier", HEADQUARTERS, "country"),
  lookupTool("lookup_currency", "The currency code of a country.", "country", CURRENCIES, "currency"),
  lookupTool("lookup_rate", "The exchange rate of a currency: US dollars per unit.", "currency", RATES, "usd"),
  {
    name: "calculate",
    description: "Evaluates an arithmetic expression (+ - * / ^, parentheses, sum(list)) and returns its value.",
    schema: z.object({
      expression: z.string().min(1).max(2_000),
      vars: z.record(z.string(), z.union([z.number(), z.array(z.number())])).optional().describe("named numbers or lists the expression uses"),
    }),
    role: "math",
    writes: false,
    latency: (latencies) => latencies.calculateMs,
    run: async (args) => ({ expression: String(args.expression), value: evaluateExpression(String(args.expression), bindVariables(args.vars)) }),
  },
  {
    name: "write_file",
    description: "Writes text to a file in the workspace (replacing it) and returns its path and size.",
    schema: z.object({ path: z.string().min(1).max(200), content: z.string().max(100_000) }),
    role: "files",
    writes: true,
    latency: (latencies) => latencies.writeMs,
    run: async (args, workspace) => {
      const target = inside(workspace, String(args.path));
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, String(args.content), "utf8");
      return { path: String(args.path), bytes: Buffer.byteLength(String(args.content), "utf8") };
    },
  },
];

export function worldTool(name: string): WorldTool {
  const tool = WORLD_TOOLS.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool named ${name}`);
  return tool;
}

/** Runs a world tool after its simulated latency. */
export async function runWorldTool(tool: WorldTool, args: Record<string, unknown>, workspace: string, latencies: ToolLatencies): Promise<unknown> {
  await sleep(tool.latency(latencies));
  return tool.run(args, workspace);
}

/** A figure as every answer and file writes it: at most two decimals, no trailing zeros. */
export function figure(value: number): string {
  return String(Math.round(value * 100) / 100);
}
