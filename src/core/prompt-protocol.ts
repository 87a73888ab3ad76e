/**
 * The shape of the prompts troupe sends: a system prompt whose first line names the role, and
 * human messages made of `## Heading` sections. Real models read them as prose; the offline and
 * scripted models read the same structure, so every provider walks the same code path.
 */

export const SECTIONS = {
  task: "Task",
  context: "Context",
  feedback: "Feedback",
  subtask: "Subtask",
  arguments: "Arguments",
  mapItem: "Map item",
  handles: "Large arguments",
  /** Arguments from untrusted sources, delimited and marked as data (src/core/spotlight.ts). */
  untrusted: "Untrusted data",
  dependencies: "Results of earlier subtasks",
  plan: "Plan",
  outcomes: "Subtask outcomes",
  review: "Review",
  errors: "Problems with the previous plan",
  board: "Board",
  question: "Question",
  options: "Options",
  panel: "Panel",
  /** The thread's earlier turns (JSON: a summary of trimmed ones, then the turns kept). */
  conversation: "Conversation",
  /** Long-term memories that may bear on the task. */
  memories: "Remembered facts",
  /** A worker whose result is the run's answer (the fast route). */
  answer: "Answer",
  /** A worker that may use more tools than it was offered: how to find them. */
  moreTools: "More tools",
} as const;

/** The line before the planner's system prompt lists its agents (`- name: description`), each followed by its tools (`  - name: description`). */
export const PLANNER_TOOLS_HEADING = "Agents and their tools:";

/** Names of the structured-output functions the planner and critic answer through. */
export const STRUCTURED_OUTPUT = {
  plan: "submit_plan",
  review: "submit_review",
  result: "submit_result",
  vote: "submit_vote",
  answer: "submit_answer",
} as const;

/** The key a model passes back, as `{ "$stash": key }`, to have the full value put in a tool argument or its result. */
export const HANDLE_KEY = "$stash";

/** A worker that answers in plain text and could not finish its subtask starts its answer with this. */
export const FAILED_PREFIX = "FAILED:";
/** A worker that answers in plain text and cannot do this kind of work at all starts its answer with this. */
export const UNABLE_PREFIX = "UNABLE:";

export function roleLine(role: string): string {
  return `You are the troupe ${role}.`;
}

/** The role named on the first line of a system prompt (`planner`, `critic`, `research`, ...). */
export function roleOf(systemPrompt: string): string | undefined {
  const match = /^You are the troupe ([a-z][\w-]*)/.exec(systemPrompt.trimStart());
  return match?.[1];
}

export function section(title: string, body: string): string {
  return `## ${title}\n${body.trim()}`;
}

/** The `## Heading` sections of a message, by heading. */
export function parseSections(text: string): Map<string, string> {
  const sections = new Map<string, string>();
  const pattern = /^## (.+)$/gm;
  const headings: Array<{ title: string; start: number; bodyStart: number }> = [];
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    headings.push({ title: (match[1] ?? "").trim(), start: match.index, bodyStart: match.index + match[0].length });
  }
  headings.forEach((heading, index) => {
    const end = headings[index + 1]?.start ?? text.length;
    sections.set(heading.title, text.slice(heading.bodyStart, end).trim());
  });
  return sections;
}

/** The subtask id named in a worker's `## Subtask` section (`s2 (execute): ...`). */
export function subtaskIdOf(text: string): string | undefined {
  const body = parseSections(text).get(SECTIONS.subtask);
  return body ? /^(\S+)/.exec(body)?.[1] : undefined;
}

/** The zero-based item index named in a worker's `## Map item` section (`item 3 of 50: ...` is 2). */
export function mapItemOf(text: string): number | undefined {
  const body = parseSections(text).get(SECTIONS.mapItem);
  const match = body ? /^item (\d+) of \d+/.exec(body) : null;
  return match ? Number(match[1]) - 1 : undefined;
}
