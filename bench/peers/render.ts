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
  const perStep = report.groups
    .filter((figures) => figures.planTokensPerStep !== undefined)
    .map((figures) => `${figures.framework}, ${figures.group}: ${number(figures.planTokensPerStep ?? 0)}`)
    .join("; ");
  return [groups, "", ratios, "", `plan tokens per step (the planner's completion tokens ÷ the plans' steps): ${perStep}`].join("\n");
}

/** The hosted profile's figures, after the bench profile's. */
function hostedPart(report: PeersReport): string[] {
  const hosted = report.hosted;
  if (!hosted) return [];
  const { modelLatency: model } = hosted;
  return [
    "",
    `    The same tasks with a latency profile closer to hosted models: ${model.firstTokenMs} ms to the first token + ${model.perPromptTokenMs} ms a prompt token + ${model.perCompletionTokenMs} ms a completion token (makespan: the median of ${hosted.repeats} run${hosted.repeats === 1 ? "" : "s"}):`,
    "",
    peersSummary(hosted),
  ];
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
    `    Makespan: the median of ${report.repeats} runs. "troupe" plans what troupe's plan offers (direct tool and combination steps, and the answer template) on the`,
    "    compact wire; \"troupe (worker steps)\" is troupe with every step a worker's subtask and no template (what they save; not compared).",
    "",
    perTask,
    "",
    peersSummary(report),
    "",
    "    troupe's calls and prompt tokens by role:",
    ...troupeRoles,
    `    simple tasks, troupe's model calls ≤ the ReAct agent's + 1: ${simple}`,
    ...hostedPart(report),
    `    target: ${report.target.met ? "all met" : `missed: ${report.target.missed.join("; ")}`} → ${report.target.met ? "met" : "MISSED"}`,
  ].join("\n");
}
