import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { AttackWorld } from "../../src/testing/injection/world.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { createBuiltinRegistry } from "../../src/tools/builtin/index.js";
import { tempDir } from "../helpers.js";

/**
 * Combination steps run directly: a calculation over earlier results (the calculator's variables
 * bound by reference) and a write whose content is a reference (a list formatted a line per
 * item) — no worker model call, with the checks a worker's calls have (approval, provenance).
 */

const troupes: Troupe[] = [];
const worlds: AttackWorld[] = [];
afterEach(async () => {
  for (const troupe of troupes.splice(0)) troupe.close();
  for (const world of worlds.splice(0)) await world.close();
});

async function engine(steps: ScriptStep[], options: { toolsConfig?: unknown; place?: AttackWorld } = {}) {
  const directory = tempDir();
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: options.place?.dataDir ?? path.join(directory, "data"),
    workspace: options.place?.workspace ?? path.join(directory, "workspace"),
    toolsConfig: options.toolsConfig ?? {},
    ...(options.place ? { tools: createBuiltinRegistry({ settings: { fetch: { allowAddresses: ["127.0.0.1/32"] } } }), config: { trust: { policy: "ask" as const } } } : {}),
  });
  troupes.push(troupe);
  return { troupe, model, workspace: troupe.workspace };
}

const calculation = (id: string, expression: string, fields: Parameters<typeof subtask>[3] = {}) =>
  subtask(id, "execute", `Compute ${expression}`, { tool: "calculator", ...fields, args: { expression: { value: expression }, ...fields.args } });

describe("direct combination steps", () => {
  it("a calculation over two references and a write of its value run without a worker: the model is called twice", async () => {
    const { troupe, model, workspace } = await engine([
      planStep([
        calculation("s1", "2 ^ 10"),
        calculation("s2", "3 ^ 5"),
        calculation("s3", "(a + b) * 2 - 100", { dependsOn: ["s1", "s2"], args: { a: { ref: "s1", path: "$" }, b: { ref: "s2", path: "$" } } }),
        subtask("s4", "execute", "Save the total to total.txt", { tool: "file_write", dependsOn: ["s3"], writes: ["total.txt"], args: { path: { value: "total.txt" }, content: { ref: "s3", path: "$" } } }),
      ]),
      answerStep("The total is 2434, saved to total.txt."),
    ]);
    const result = await troupe.run({ task: "compute 2^10 and 3^5, add them, double it, subtract 100 and save it to total.txt" });
    expect(result.status, result.error).toBe("completed");
    model.assertDone();
    // The planner and the synthesizer: no worker, and no critic, every outcome being a verified direct tool result.
    expect(result.metrics.llmCalls).toBe(2);
    expect(readFileSync(path.join(workspace, "total.txt"), "utf8")).toBe("2434");
    const write = result.plan.find((view) => view.id === "s4");
    // The file holds the referenced value byte for byte (its number as decimal text).
    expect(write?.artifacts?.[0]).toMatchObject({ path: "total.txt", source: { from: "s3 $", bytes: 4, identical: true, byReference: true } });
  });

  it("a map's results are joined into a file, a line per item, by the reference's format", async () => {
    const { troupe, model, workspace } = await engine([
      planStep([
        subtask("s1", "execute", "Compute each expression", { tool: "calculator", mapOver: "expression", args: { expression: { value: ["1 + 1", "2 * 3", "10 / 4"] } } }),
        calculation("s2", "sum(values)", { dependsOn: ["s1"], args: { values: { ref: "s1", path: "$.results[*].output" } } }),
        subtask("s3", "execute", "Save one line per expression to results.txt", {
          tool: "file_write",
          dependsOn: ["s1"],
          writes: ["results.txt"],
          args: { path: { value: "results.txt" }, content: { ref: "s1", path: "$.results[*]", format: "{input} = {output}" } },
        }),
      ]),
      answerStep("Saved; they add up to 10.5."),
    ]);
    const result = await troupe.run({ task: "compute 1 + 1, 2 * 3 and 10 / 4, save one per line to results.txt and add them up" });
    expect(result.status, result.error).toBe("completed");
    model.assertDone();
    // The planner and the synthesizer: no worker, and no critic, every outcome being a verified direct tool result.
    expect(result.metrics.llmCalls).toBe(2);
    expect(readFileSync(path.join(workspace, "results.txt"), "utf8")).toBe("1 + 1 = 2\n2 * 3 = 6\n10 / 4 = 2.5");
    expect(result.plan.find((view) => view.id === "s2")?.summary).toContain("= 10.5");
  });

  it("a variable the step did not bind, or one that is not a number, fails the step with its code", async () => {
    const { troupe } = await engine([
      planStep([
        subtask("s1", "research", "List the workspace", { tool: "file_list", args: { path: { value: "." }, recursive: { value: false } } }),
        calculation("s2", "a + c", { args: { a: { value: 1 }, b: { value: 2 } } }),
        calculation("s3", "entries * 2", { dependsOn: ["s1"], args: { entries: { ref: "s1", path: "$.entries" } } }),
        calculation("s4", "price * 2", { args: { price: { value: "twelve" } } }),
      ]),
      reviewStep(0.2, { redo: [] }),
      answerStep("Both calculations failed."),
    ]);
    const result = await troupe.run({ task: "two calculations that cannot run" });
    const missing = result.plan.find((view) => view.id === "s2");
    expect(missing).toMatchObject({ status: "failed" });
    expect(missing?.error).toMatch(/unknown_variable.*unknown variable "c".*the variables: a, b/);
    const nonNumeric = result.plan.find((view) => view.id === "s3");
    expect(nonNumeric?.error).toMatch(/variable_not_numeric.*"entries" is a list, not a number; .*sum\(entries\)/);
    expect(result.plan.find((view) => view.id === "s4")?.error).toMatch(/variable_not_numeric.*"price" is not a number: it is the text "twelve"/);
  });

  it("a direct write that needs a person's approval waits for it, and runs once approved", async () => {
    const { troupe, model, workspace } = await engine(
      [
        planStep([
          calculation("s1", "17% of 2340"),
          subtask("s2", "execute", "Save it to result.txt", { tool: "file_write", dependsOn: ["s1"], writes: ["result.txt"], args: { path: { value: "result.txt" }, content: { ref: "s1", path: "$" } } }),
        ]),
        // Every outcome is a verified direct tool result: the critic is skipped.
        answerStep("397.8, saved."),
      ],
      { toolsConfig: { approval: { tools: ["file_write"] } } },
    );
    const waiting = await troupe.run({ task: "compute 17% of 2,340 and save it to result.txt" });
    expect(waiting.status).toBe("interrupted");
    expect(waiting.interrupt?.payload).toMatchObject({ tool: "file_write", args: { path: "result.txt", content: "397.8" } });
    expect(() => readFileSync(path.join(workspace, "result.txt"))).toThrow();
    const done = await troupe.resume(waiting.threadId, { decision: "approve" });
    expect(done.status, done.error).toBe("completed");
    model.assertDone();
    expect(readFileSync(path.join(workspace, "result.txt"), "utf8")).toBe("397.8");
  });

  it("a write whose content came from a page by reference carries the page's untrusted label", async () => {
    const place = await AttackWorld.open({ page: "Widgets cost 12.50 today." });
    worlds.push(place);
    const { troupe, model } = await engine(
      [
        planStep([
          subtask("s1", "research", "Fetch the page", { tool: "http_fetch", args: { url: { value: `${place.base}/page` } } }),
          subtask("s2", "execute", "Quote it in quote.md", { tool: "file_write", dependsOn: ["s1"], writes: ["quote.md"], args: { path: { value: "quote.md" }, content: { ref: "s1", path: "$.text", format: "> {}" } } }),
        ]),
        reviewStep(0.9),
        answerStep("Quoted."),
      ],
      { place },
    );
    const result = await troupe.run({ task: "quote the page in quote.md" });
    expect(result.status, result.error).toBe("completed");
    model.assertDone();
    expect(place.read("quote.md")).toMatch(/^> .*Widgets cost 12\.50 today\./s);
    const write = result.plan.find((view) => view.id === "s2");
    expect(write?.provenance).toMatchObject({ trust: "untrusted", sources: expect.arrayContaining([{ kind: "web", name: `${place.base}/page` }]) });
  });
});
