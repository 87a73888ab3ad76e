import { describe, expect, it } from "vitest";
import { namespaceBm25, wordStem } from "./namespace-bm25.js";

describe("namespaceBm25", () => {
  it("counts the forms stemming matched, and a number only whole", () => {
    expect(wordStem("reports")).toEqual({ stem: "report", whole: false });
    expect(wordStem("prefers")).toEqual({ stem: "prefer", whole: false });
    expect(wordStem("7")).toEqual({ stem: "7", whole: true });
    const [reported, seventeen, seven] = namespaceBm25(["Reported twice, reports weekly", "account 17", "account 7"], ["report", "7"], 3);
    expect(seventeen).toBe(0);
    expect(seven).toBeGreaterThan(0);
    expect(reported).toBeGreaterThan(seven as number);
  });

  it("weighs a word by how rare it is among the namespace's facts", () => {
    const [common, rare] = namespaceBm25(["the invoices are sent", "the audit is due"], ["invoices", "audit"], 10);
    expect(common).toBeCloseTo(rare as number);
    // "invoices" in three of the four: "audit" (in one) counts for more.
    const scores = namespaceBm25(["invoices sent", "invoices paid", "invoices lost", "audit due"], ["invoices", "audit"], 4);
    expect(scores[3]).toBeGreaterThan(scores[0] as number);
    expect(namespaceBm25([], ["anything"], 0)).toEqual([]);
  });
});
