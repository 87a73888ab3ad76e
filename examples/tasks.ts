/** The tasks of the three demos; `npm run bench` measures the prompt tokens each one costs. */
export const EXAMPLE_TASKS = {
  planning: "Make a six-week plan for learning Python: topics for each week, exercises, and how to check what was learned.",
  tools: "compute 17% of 2,340 and save it to result.txt",
  code: "Write a Python script hn_titles.py that fetches the Hacker News front page and saves each story's title and link as JSON to hn_top.json.",
} as const;
