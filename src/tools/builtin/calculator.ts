import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool } from "../define-tool.js";
import { ExpressionError, evaluateExpression } from "../math/expression.js";

export const CalculatorArgs = z.object({
  expression: z
    .string()
    .min(1)
    .max(2_000)
    .describe("an arithmetic expression, e.g. 17% of 2340, (3 + 4) * 2, sqrt(2), round(10 / 3, 2)"),
});
export type CalculatorArgs = z.infer<typeof CalculatorArgs>;

/** Arithmetic and percentages through a real expression parser; never eval. */
export const calculatorTool = defineTool({
  name: "calculator",
  description:
    "Evaluate an arithmetic expression exactly. Supports + - * / ^ mod, parentheses, percentages (17% of 2340), " +
    "factorial, and functions sqrt, cbrt, abs, round, floor, ceil, min, max, sum, avg, pow, exp, ln, log, sin, cos, tan.",
  schema: CalculatorArgs,
  permission: "NONE",
  powers: [],
  idempotent: true,
  timeoutMs: 1_000,
  async execute({ expression }) {
    try {
      return evaluateExpression(expression);
    } catch (error) {
      if (error instanceof ExpressionError) throw new ToolError("invalid_expression", error.message, { position: error.position });
      throw error;
    }
  },
  summarize: (value, { expression }) => `${expression} = ${String(value)}`,
});
