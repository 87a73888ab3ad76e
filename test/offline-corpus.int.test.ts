import pMap from "p-map";
import { beforeAll, describe, expect, it } from "vitest";
import { type CaseOutcome, fileBytes, loadCorpus, runCorpusCase } from "../bench/offline-corpus.js";
import { CLI } from "./helpers.js";

/**
 * The offline corpus through the built CLI (`npm test` builds first): every case in its own
 * workspace and data directory, three CLI processes at a time (each one starts in about a
 * second), then one test per case naming what differed. The corpus is in
 * test/offline-corpus/cases.json; `npm run bench -- --only offline-corpus` reports its pass rate.
 */
const corpus = loadCorpus();
const outcomes = new Map<string, CaseOutcome>();

beforeAll(async () => {
  await pMap(
    corpus.cases,
    async (testCase) => {
      outcomes.set(testCase.task, await runCorpusCase(corpus, testCase, { cli: CLI }));
    },
    { concurrency: 3 },
  );
}, 900_000);

describe("the offline corpus", () => {
  it("has at least 40 tasks, including ones the offline model must not complete and one that waits for an approval", () => {
    expect(corpus.cases.length).toBeGreaterThanOrEqual(40);
    expect(new Set(corpus.cases.map((testCase) => testCase.task)).size).toBe(corpus.cases.length);
    expect(corpus.cases.filter((testCase) => testCase.expect === "failed").length).toBeGreaterThanOrEqual(3);
    expect(corpus.cases.some((testCase) => testCase.approve)).toBe(true);
  });

  it("makes the issue's 8.9 KB file with trailing whitespace, CRLF and multibyte text, exactly", () => {
    const spec = corpus.cases.find((testCase) => testCase.task === "read f300.txt and save it to c300.txt")?.add["f300.txt"];
    const bytes = fileBytes(spec ?? "");
    expect(bytes.length).toBe(8900);
    expect(bytes.toString("utf8")).toContain("   \r\nCafé");
    expect(Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes)).toBe(true);
  });

  for (const testCase of corpus.cases) {
    it(`${testCase.expect === "failed" ? "does not complete" : "completes"}: ${testCase.task}`, () => {
      const outcome = outcomes.get(testCase.task);
      expect(outcome?.problems).toEqual([]);
    });
  }
});
