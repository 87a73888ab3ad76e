import { formatNumber as number, formatTable } from "../support.js";
import type { Metric, PeersReport } from "./peers.js";

const METRIC_NAMES: Record<Metric, string> = { makespanMs: "makespan", modelCalls: "model calls", promptTokens: "prompt tokens", completionTokens: "completion tokens" };

const integer = (value: number) => Math.round(value).toLocaleString("en-US");

/** The per-group summary and the ratios, also what the README quotes. */
export function peersSummary(report: PeersReport): string {
  const groups = formatTable(
    ["group", "framework", "right", "makespan ms", "model calls", "prompt tokens", "completion tokens"],
    report.groups.map((figures) => [figures.group, figures.framework, `${figures.correct}/${figures.tasks}`, integer(figures.makespanMs), String(figures.modelCalls), integer(figures.promptTokens), integer(figures.completionTokens)]),
  );
  const ratios = formatTable(
    ["group", "metric", "troupe", "best peer", "its figure", "troupe ÷ best", "target", "verdict"],
    report.ratios.map((ratio) => [
      ratio.group,
      METRIC_NAMES[ratio.metric],
      integer(ratio.troupe),
      ratio.bestPeer ?? "none right",
      integer(ratio.best),
      `${number(ratio.ratio)}×`,
      ratio.target === undefined ? "" : `≤ ${ratio.target}×`,
      ratio.met === undefined ? "" : ratio.met ? "met" : "MISSED",
    ]),
  );
  return [groups, "", ratios].join("\n");
}

export function peersSection(report: PeersReport): string {
  const perTask = formatTable(
    ["task", "framework", "makespan ms", "calls", "prompt tok", "completion tok", "right"],
    report.runs.map((run) => [run.task, run.framework, integer(run.makespanMs), String(run.modelCalls), integer(run.promptTokens), integer(run.completionTokens), run.correct ? "yes" : `NO: ${run.problem ?? ""}`.slice(0, 80)]),
  );
  const troupeRoles = report.groups
    .filter((figures) => figures.byRole)
    .map((figures) => `      ${`${figures.framework}, ${figures.group}:`.padEnd(33)} ${Object.entries(figures.byRole ?? {}).map(([role, entry]) => `${role} ${entry.calls} calls / ${integer(entry.promptTokens)} tokens`).join(", ")}`);
  const simple = report.simpleCalls.map((row) => `${row.task} ${row.troupe} vs ${row.react}+1 ${row.met ? "met" : "MISSED"}`).join("; ");
  const { modelLatency: model, toolLatencies: tools } = report;
  return [
    `19. Side by side with the peers: ${new Set(report.runs.map((run) => run.task)).size} tasks in four groups through ${report.frameworks.join(", ")};`,
    "    one oracle model behind each framework's own model interface decides the same tool calls, handoffs and answers from what it is sent;",
    `    the model takes ${model.firstTokenMs} ms + ${model.perPromptTokenMs} ms a prompt token + ${model.perCompletionTokenMs} ms a completion token, lookups ${tools.lookupMs} ms, the calculator ${tools.calculateMs} ms,`,
    `    a file write ${tools.writeMs} ms; tokens counted with ${report.encoding} over what each framework sent (messages and tool definitions).`,
    `    Makespan: the median of ${report.repeats} runs. "troupe (direct steps)" is troupe with the oracle planning direct tool steps where a step decides nothing`,
    "    (a lever's estimate, not compared); \"troupe (review: never)\" is troupe with no critic call (not compared either).",
    "",
    perTask,
    "",
    peersSummary(report),
    "",
    "    troupe's calls and prompt tokens by role:",
    ...troupeRoles,
    `    simple tasks, troupe's model calls ≤ the ReAct agent's + 1: ${simple}`,
    `    target: ${report.target.met ? "all met" : `missed: ${report.target.missed.join("; ")}`} → ${report.target.met ? "met" : "MISSED"}`,
  ].join("\n");
}
