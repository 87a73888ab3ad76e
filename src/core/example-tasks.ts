/**
 * troupe's example tasks: the three demos (`examples/`), offered as MCP prompts, and measured by
 * `npm run bench` for the prompt tokens each one costs.
 */
export const EXAMPLE_TASKS = {
  planning: "Make a six-week plan for learning Python: topics for each week, exercises, and how to check what was learned.",
  tools: "compute 17% of 2,340 and save it to result.txt",
  code: "Write a Python script hn_titles.py that fetches the Hacker News front page and saves each story's title and link as JSON to hn_top.json.",
} as const;

export type ExampleName = keyof typeof EXAMPLE_TASKS;

/** What each example shows, in a few words (the title of its prompt). */
export const EXAMPLE_TITLES: Record<ExampleName, string> = {
  planning: "Example: a six-week study plan (open-ended writing: needs a real model)",
  tools: "Example: compute a percentage and save it to a file (works offline)",
  code: "Example: write and run a script that fetches a page (needs a real model and the network)",
};
