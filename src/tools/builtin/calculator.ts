import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool, outputSchemaOf } from "../define-tool.js";
import { ExpressionError, evaluateExpression } from "../math/expression.js";
import { bindVariables } from "../math/variables.js";

export const CalculatorArgs = z.object({
  expression: z
    .string()
    .min(1)
    .max(2_000)
    .describe("an arithmetic expression, e.g. 17% of 2340, (3 + 4) * 2, sqrt(2), round(10 / 3, 2)"),
  // Checked by bindVariables, so a value that is not a number is refused with its own code. A direct step's
  // arguments other than expression arrive here (fitToolArgs), each usually taken by reference.
  vars: z.record(z.string(), z.unknown()).optional().describe("names the expression uses: numbers or lists"),
});
export type CalculatorArgs = z.infer<typeof CalculatorArgs>;

/** A variable's value as a summary shows it: a number as written, a list of them in brackets (the first ten). */
function shown(value: unknown): string | undefined {
  if (typeof value === "number") return String(value);
  if (Array.isArray(value) && value.every((item) => typeof item === "number")) return `[${value.slice(0, 10).join(", ")}${value.length > 10 ? ", …" : ""}]`;
  return undefined;
}

/**
 * The expression with its variables' values in their place (`xa + xb` → `32 + 25`), so a summary
 * says what was computed in numbers, not in the names a plan bound them to. One pass; a name
 * without a shown value stays.
 */
function withValues(expression: string, vars: Record<string, unknown> | undefined): string {
  if (!vars || Object.keys(vars).length === 0) return expression;
  let out = "";
  let position = 0;
  while (position < expression.length) {
    const char = expression[position] as string;
    if (!/[A-Za-z_]/.test(char)) {
      out += char;
      position += 1;
      continue;
    }
    let end = position + 1;
    while (end < expression.length && /[A-Za-z0-9_]/.test(expression[end] as string)) end += 1;
    const name = expression.slice(position, end);
    out += (Object.hasOwn(vars, name) ? shown(vars[name]) : undefined) ?? name;
    position = end;
  }
  return out;
}

/** Arithmetic and percentages through a real expression parser; never eval. */
export const calculatorTool = defineTool({
  name: "calculator",
  description:
    "Evaluate an arithmetic expression exactly. Supports + - * / ^ mod, parentheses, percentages (17% of 2340), " +
    "factorial, and functions sqrt, cbrt, abs, round, floor, ceil, min, max, sum, avg, pow, exp, ln, log, sin, cos, tan.",
  schema: CalculatorArgs,
  outputSchema: outputSchemaOf(z.number()),
  permission: "NONE",
  powers: [],
  idempotent: true,
  timeoutMs: 1_000,
  async execute({ expression, vars }) {
    try {
      return evaluateExpression(expression, bindVariables(vars));
    } catch (error) {
      if (error instanceof ExpressionError) throw new ToolError(error.code, error.message, { position: error.position });
      throw error;
    }
  },
  summarize: (value, { expression, vars }) => `${withValues(expression, vars)} = ${String(value)}`,
});
