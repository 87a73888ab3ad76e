import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool } from "../define-tool.js";
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
  async execute({ expression, vars }) {
    try {
      return evaluateExpression(expression, bindVariables(vars));
    } catch (error) {
      if (error instanceof ExpressionError) throw new ToolError(error.code, error.message, { position: error.position });
      throw error;
    }
  },
  summarize: (value, { expression }) => `${expression} = ${String(value)}`,
});
