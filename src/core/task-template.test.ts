import { describe, expect, it } from "vitest";
import { fillTaskTemplate, TaskTemplate, TaskTemplates } from "./task-template.js";

const report = {
  name: "weekly-report",
  description: "A weekly report from a file",
  task: "Read {{file}} and write a report of at most {{words}} words for {{team}}",
  arguments: [{ name: "file" }, { name: "words", required: false }, { name: "team", values: ["sales", "ops"] }],
};

function problems(value: unknown): string[] {
  const parsed = TaskTemplates.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
}

describe("task templates (config: taskTemplates)", () => {
  it("fills each placeholder once, an optional argument left out as nothing", () => {
    const template = TaskTemplate.parse(report);
    expect(fillTaskTemplate(template, { file: "q3.csv", words: "200", team: "sales" })).toBe("Read q3.csv and write a report of at most 200 words for sales");
    // A value that looks like a placeholder is not filled again.
    expect(fillTaskTemplate(template, { file: "{{team}}", team: "ops" })).toBe("Read {{team}} and write a report of at most  words for ops");
  });

  it("refuses a filled task over the task limit, and an empty one", () => {
    const template = TaskTemplate.parse({ name: "echo", description: "d", task: "{{text}}", arguments: [{ name: "text", maxLength: 5_000 }] });
    expect(() => fillTaskTemplate(template, { text: "x".repeat(5_001) })).toThrow(expect.objectContaining({ code: "task_too_long" }));
    expect(() => fillTaskTemplate(template, { text: "   " })).toThrow(expect.objectContaining({ code: "task_empty" }));
  });

  it("refuses what cannot work, naming the setting", () => {
    expect(problems([{ ...report, task: "Read {{file}} for {{nobody}}" }])).toEqual(
      expect.arrayContaining([expect.stringMatching(/^0\.task: \{\{nobody\}\} is not one of the template's arguments/), expect.stringMatching(/^0\.arguments\.1\.name: the argument "words" is not used/)]),
    );
    expect(problems([{ ...report, name: "task" }])).toEqual([expect.stringMatching(/^0\.name: "task" is one of troupe's own prompts/)]);
    expect(problems([{ ...report, name: "example_mine" }])).toEqual([expect.stringMatching(/one of troupe's own prompts/)]);
    expect(problems([report, report])).toEqual([expect.stringMatching(/^1\.name: the template "weekly-report" is declared twice/)]);
    expect(problems([{ ...report, arguments: [...report.arguments, { name: "file" }] }])).toEqual([expect.stringMatching(/the argument "file" is declared twice/)]);
    expect(problems([{ ...report, arguments: [{ name: "file", values: ["a"], complete: "threads" }, { name: "words" }, { name: "team" }] }])).toEqual([expect.stringMatching(/either values or complete/)]);
    expect(problems([{ ...report, extra: 1 }])).toEqual([expect.stringMatching(/Unrecognized key/)]);
    expect(problems([{ ...report, arguments: [{ name: "File" }] }])).not.toEqual([]);
    expect(problems(Array.from({ length: 101 }, (_, index) => ({ ...report, name: `t${index}` })))).not.toEqual([]);
  });
});
