import { describe, expect, it } from "vitest";
import type { MappedExecutionReport } from "../core/map-report.js";
import { countTextTokens } from "../providers/token-count.js";
import { type OutcomeSource, outcomesJson, renderOutcomes, SYNTHESIZER_EXTRACTS } from "./outcomes.js";

/** A map over `count` parts, each priced: the report a mapped subtask leaves in the stash. */
function pricesReport(count: number): MappedExecutionReport {
  return {
    overallStatus: "ALL_SUCCESS",
    results: Array.from({ length: count }, (_, index) => ({ status: "success" as const, input: `part-${index}`, output: { item: `part-${index}`, price: index + 0.25 } })),
  };
}

function mapOutcome(count: number): OutcomeSource {
  return { id: "s1", label: `Look up the price of each of ${count} parts`, agent: "lookup", status: "done", attempts: 1, summary: `${count}/${count} items succeeded`, value: pricesReport(count) };
}

const TOTAL = (200 * 199) / 2 + 200 * 0.25;

describe("the synthesizer's outcomes", () => {
  it("a 200-item map whose prices a later subtask summed: a sample of items and the counts, the total there to state, the whole well under its bound", async () => {
    const sources: OutcomeSource[] = [mapOutcome(200), { id: "s2", label: "Add up the prices", agent: "math", status: "done", attempts: 1, dependsOn: ["s1"], summary: String(TOTAL), value: TOTAL }];
    const views = renderOutcomes(sources, 1, SYNTHESIZER_EXTRACTS);
    const text = outcomesJson(views);
    expect(views[0]?.items).toMatchObject({ total: 200, succeeded: 200, failed: 0, notListed: 200 - SYNTHESIZER_EXTRACTS.usedItems });
    expect(views[0]?.items?.listed).toHaveLength(SYNTHESIZER_EXTRACTS.usedItems);
    expect(text).toContain(`"summary":"${TOTAL}"`);
    expect(JSON.parse(text)).toHaveLength(2);
    expect(await countTextTokens(text)).toBeLessThan(400);
  });

  it("a 200-item map nothing else used: its first 40 items listed (the answer states them), the rest counted, the size bounded whatever the map's length", async () => {
    const measure = async (count: number) => countTextTokens(outcomesJson(renderOutcomes([mapOutcome(count)], 1, SYNTHESIZER_EXTRACTS)));
    const views = renderOutcomes([mapOutcome(200)], 1, SYNTHESIZER_EXTRACTS);
    expect(views[0]?.items?.listed).toHaveLength(SYNTHESIZER_EXTRACTS.successItems);
    expect(views[0]?.items?.listed[39]).toMatchObject({ index: 39, input: "part-39", output: expect.stringContaining("39.25") });
    expect(views[0]?.items?.notListed).toBe(160);
    // The same but for the counts' digits.
    expect(await measure(2_000)).toBeLessThan((await measure(200)) + 25);
  });

  it("lists failed items first, whatever the sample", () => {
    const report = pricesReport(200);
    report.results[150] = { status: "error", input: "part-150", error: "no such part" };
    report.overallStatus = "PARTIAL_SUCCESS";
    const sources: OutcomeSource[] = [{ ...mapOutcome(200), value: report }, { id: "s2", label: "Add up", agent: "math", status: "done", attempts: 1, dependsOn: ["s1"], value: 1 }];
    const listed = renderOutcomes(sources, 1, SYNTHESIZER_EXTRACTS)[0]?.items?.listed ?? [];
    expect(listed.map((item) => item.index)).toEqual([0, 1, 2, 150]);
    expect(listed.at(-1)).toMatchObject({ status: "error", error: "no such part" });
  });
});
