import { z } from "zod";

/** How a mapped subtask went as a whole. */
export const OVERALL_STATUSES = ["ALL_SUCCESS", "PARTIAL_SUCCESS", "ALL_FAILURE"] as const;
export const OverallStatus = z.enum(OVERALL_STATUSES);
export type OverallStatus = z.infer<typeof OverallStatus>;

/** One item of a mapped subtask: its input, and its output or its error. */
export const MappedItemResult = z.object({
  status: z.enum(["success", "error"]),
  input: z.unknown(),
  output: z.unknown().optional(),
  error: z.string().optional(),
});
export type MappedItemResult = z.infer<typeof MappedItemResult>;

/**
 * The result of a subtask with `mapOver`: one entry per list item, in the list's order, so a
 * failed item never hides the others. Downstream references select from it, e.g.
 * `$.results[?(@.status=='success')].output`.
 */
export const MappedExecutionReport = z.object({
  overallStatus: OverallStatus,
  results: z.array(MappedItemResult),
});
export type MappedExecutionReport = z.infer<typeof MappedExecutionReport>;

/** ALL_SUCCESS when nothing failed (an empty list included), ALL_FAILURE when nothing succeeded. */
export function overallStatusOf(results: readonly Pick<MappedItemResult, "status">[]): OverallStatus {
  const failed = results.filter((result) => result.status === "error").length;
  if (failed === 0) return "ALL_SUCCESS";
  return failed === results.length ? "ALL_FAILURE" : "PARTIAL_SUCCESS";
}

export function successfulOutputs(report: MappedExecutionReport): unknown[] {
  return report.results.filter((result) => result.status === "success").map((result) => result.output);
}

export function failedInputs(report: MappedExecutionReport): unknown[] {
  return report.results.filter((result) => result.status === "error").map((result) => result.input);
}

/** Whether a stashed value is a map report (as opposed to an ordinary result). */
export function isMappedReport(value: unknown): value is MappedExecutionReport {
  return MappedExecutionReport.safeParse(value).success;
}
