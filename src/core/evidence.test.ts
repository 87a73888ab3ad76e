import { describe, expect, it } from "vitest";
import { evidenceIndex, evidenceSection, refOf } from "./evidence.js";

const NOTICE = "Answered offline by troupe's rule-based model (no language model was used).";
const ANSWER = [NOTICE, "", "- List the files: .: 0 entries", "- Compute 2^10: 2^10 = 1024"].join("\n");
const SOURCES = [
  { id: "s1", label: "List the files", text: ".: 0 entries", refs: ["file ."] },
  { id: "s2", label: "Compute 2^10", text: "2^10 = 1024", refs: ["calculator 2^10"] },
];

describe("the evidence index", () => {
  it("maps a verified calculation's claim to its subtask, and leaves a notice of how the answer was made out", () => {
    const index = evidenceIndex(ANSWER, SOURCES, { notClaims: [NOTICE] });
    expect(index.claims.map((claim) => [claim.text, claim.basis, claim.sources])).toEqual([
      ["List the files: .: 0 entries", "matched", ["s1"]],
      ["Compute 2^10: 2^10 = 1024", "matched", ["s2"]],
    ]);
    expect(evidenceSection(index)).not.toContain("no source found");
  });

  it("still marks a claim nothing supports", () => {
    const index = evidenceIndex(`${ANSWER}\n- Bananas are yellow and curved.`, SOURCES, { notClaims: [NOTICE] });
    expect(evidenceSection(index)).toContain("“Bananas are yellow and curved.” ← no source found: check it");
  });

  it("names a calculation by its expression", () => {
    expect(refOf("calculator", '{"expression":"17% of 2,340"}')).toBe("calculator 17% of 2,340");
    expect(refOf("file_read", '{"path":"notes.md"}')).toBe("file notes.md");
  });
});
