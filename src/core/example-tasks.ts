/**
 * troupe's example tasks: the three demos (`examples/`), offered as MCP prompts (`example_<name>`),
 * and measured by `npm run bench` for the prompt tokens each one costs. The title says what each
 * shows, in a few words.
 */
export const EXAMPLES = [
  {
    name: "planning",
    title: "Example: a six-week study plan (open-ended writing: needs a real model)",
    task: "Make a six-week plan for learning Python: topics for each week, exercises, and how to check what was learned.",
  },
  { name: "tools", title: "Example: compute a percentage and save it to a file (works offline)", task: "compute 17% of 2,340 and save it to result.txt" },
  {
    name: "code",
    title: "Example: write and run a script that fetches a page (needs a real model and the network)",
    task: "Write a Python script hn_titles.py that fetches the Hacker News front page and saves each story's title and link as JSON to hn_top.json.",
  },
] as const;

type Example = (typeof EXAMPLES)[number];

/** The example tasks by name. */
export const EXAMPLE_TASKS = Object.fromEntries(EXAMPLES.map((example) => [example.name, example.task])) as { readonly [E in Example as E["name"]]: E["task"] };
