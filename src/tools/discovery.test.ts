import { describe, expect, it } from "vitest";
import { catalogueTools, LABELLED_SUBTASKS } from "../testing/tool-catalogue.js";
import { fakeEmbedding } from "../testing/fake-openai-server.js";
import { createBuiltinRegistry } from "./builtin/index.js";
import { stem, ToolIndex, toolTerms } from "./discovery.js";
import type { ToolRegistry } from "./registry.js";

function registryWithCatalogue(): ToolRegistry {
  const registry = createBuiltinRegistry();
  for (const tool of catalogueTools()) registry.register(tool);
  return registry;
}

/** The share of labelled subtasks whose tool is among the first `k` found. */
async function recallAt(index: ToolIndex, among: Set<string>, k: number): Promise<{ recall: number; misses: string[] }> {
  const misses: string[] = [];
  for (const { label, tool } of LABELLED_SUBTASKS) {
    const found = await index.search(label, { among, k });
    if (!found.some((match) => match.name === tool)) misses.push(`${label} → ${tool}: ${found.map((match) => match.name).join(", ")}`);
  }
  return { recall: 1 - misses.length / LABELLED_SUBTASKS.length, misses };
}

describe("tool discovery by retrieval", () => {
  it("splits names into words and stems them", () => {
    expect(toolTerms("calendar.create_event")).toEqual(["calendar", "create", "event"]);
    expect(toolTerms("createEvent")).toEqual(["create", "Event"]);
    expect(["events", "scheduling", "the", "queries", "boxes"].map(stem)).toEqual(["event", "schedul", null, "query", "box"]);
  });

  it("finds the right tool in the top 5 for labelled subtasks among 200 registered tools and the built-ins (recall ≥ 0.9)", async () => {
    const registry = registryWithCatalogue();
    expect(registry.names()).toHaveLength(220);
    const index = new ToolIndex(registry.names().map((name) => registry.spec(name)));
    const { recall, misses } = await recallAt(index, new Set(registry.names()), 5);
    expect(recall, misses.join("\n")).toBeGreaterThanOrEqual(0.9);
  });

  it("returns only tools among those allowed, says why each was found, and fuses embeddings when given", async () => {
    const registry = registryWithCatalogue();
    const index = new ToolIndex(registry.names().map((name) => registry.spec(name)));
    const allowed = new Set(registry.names().filter((name) => !name.startsWith("calendar.")));
    const found = await index.search("Schedule a meeting on the calendar", { among: allowed, k: 5 });
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((match) => !match.name.startsWith("calendar."))).toBe(true);
    const best = await index.search("Schedule a calendar event with the team", { among: new Set(registry.names()), k: 3 });
    expect(best[0]).toMatchObject({ name: "calendar.create_event", why: expect.stringMatching(/^BM25 [\d.]+ on /) });
    const calls: string[][] = [];
    const embedder = {
      embedDocuments: async (texts: string[]) => {
        calls.push(texts);
        return texts.map(fakeEmbedding);
      },
      embedQuery: async (text: string) => fakeEmbedding(text),
    };
    const fused = await index.search("Schedule a calendar event with the team", { among: new Set(registry.names()), k: 5, embedder });
    const created = fused.find((match) => match.name === "calendar.create_event");
    expect(created?.why).toMatch(/^BM25 .*; embedding similarity 0\.\d+$/);
    await index.search("another query", { among: new Set(registry.names()), k: 3, embedder });
    // The tools are embedded once per embedder, in one batch.
    expect(calls).toHaveLength(1);
    expect(calls[0]).toHaveLength(220);
  });

  it("falls back to BM25 alone, saying so, when the embeddings fail", async () => {
    const registry = registryWithCatalogue();
    const index = new ToolIndex(registry.names().map((name) => registry.spec(name)));
    const broken = { embedDocuments: async () => Promise.reject(new Error("503 from the embeddings endpoint")), embedQuery: async () => [] };
    const found = await index.search("Translate the welcome text into Japanese", { among: new Set(registry.names()), k: 5, embedder: broken });
    expect(found[0]?.name).toBe("translate.translate_text");
    expect(found[0]?.why).toMatch(/embeddings unavailable: 503 from the embeddings endpoint/);
  });
});
