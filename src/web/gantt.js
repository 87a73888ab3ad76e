// Draws where a run's time went as a Gantt strip: one row per subtask in plan order, a bar from
// its start to its end on one time axis, coloured by status, a running subtask's bar growing to
// now, and the critical path highlighted. Times are the server's (ms since the epoch): nodes'
// startedAt / endedAt and criticalPath from /tasks/:id/graph (the renderer `troupe runs show
// --json` uses), or the `at` of subtask-start / subtask-end events while the run goes.

const SVG = "http://www.w3.org/2000/svg";
const LABEL_WIDTH = 200;
const ROW_HEIGHT = 24;
const BAR_HEIGHT = 14;
const AXIS_HEIGHT = 22;
const PAD = 8;

function element(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const clip = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function formatMs(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** A round step for the axis's ticks: 1, 2 or 5 × a power of ten, at most about six ticks. */
function tickStep(span) {
  const rough = span / 6;
  const power = 10 ** Math.floor(Math.log10(Math.max(rough, 1)));
  return [1, 2, 5, 10].map((factor) => factor * power).find((step) => step >= rough) ?? power * 10;
}

/**
 * The times of a graph's nodes, for the strip: `{ nodes: [{ id, label, status, startedAt,
 * endedAt }], criticalPath, criticalPathMs, makespanMs }`; nodes without times are waiting.
 */
export function timingOf(graph) {
  return {
    nodes: (graph?.nodes ?? []).map(({ id, label, status, startedAt, endedAt }) => ({ id, label, status, startedAt, endedAt })),
    criticalPath: graph?.criticalPath ?? [],
    criticalPathMs: graph?.criticalPathMs ?? null,
    makespanMs: graph?.makespanMs ?? null,
  };
}

/** Whether a subtask of the strip is still running (started, no end). */
export const isRunning = (node) => node.startedAt !== undefined && node.startedAt !== null && (node.endedAt === undefined || node.endedAt === null);

/** Replaces the strip in `container` with `timing` (see timingOf), a running bar drawn to `now` (server time). */
export function drawGantt(container, timing, now) {
  container.replaceChildren();
  const started = timing.nodes.filter((node) => typeof node.startedAt === "number");
  if (timing.nodes.length === 0 || started.length === 0) {
    const empty = document.createElement("p");
    empty.className = "muted";
    empty.textContent = timing.nodes.length === 0 ? "" : "No subtask has started yet.";
    container.append(empty);
    return;
  }
  const origin = Math.min(...started.map((node) => node.startedAt));
  const endOf = (node) => (typeof node.endedAt === "number" ? node.endedAt : node.status === "RUNNING" ? Math.max(now, node.startedAt) : node.startedAt);
  const end = Math.max(...started.map(endOf));
  const span = Math.max(1, end - origin);
  const width = Math.max(480, container.clientWidth || 1000);
  const axisWidth = width - LABEL_WIDTH - PAD * 2;
  const x = (at) => LABEL_WIDTH + PAD + ((at - origin) / span) * axisWidth;
  const height = AXIS_HEIGHT + timing.nodes.length * ROW_HEIGHT + PAD;
  const critical = new Set(timing.criticalPath);
  const svg = element("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "gantt", role: "img", "aria-label": "subtasks on a time axis" });

  const step = tickStep(span);
  for (let tick = 0; tick <= span + 0.5; tick += step) {
    svg.append(element("line", { x1: x(origin + tick), x2: x(origin + tick), y1: AXIS_HEIGHT - 4, y2: height - PAD, class: "gantt-tick" }));
    const anchor = tick === 0 ? "start" : x(origin + tick) > width - 30 ? "end" : "middle";
    svg.append(element("text", { x: x(origin + tick), y: AXIS_HEIGHT - 8, class: "gantt-tick-label", "text-anchor": anchor }, formatMs(tick)));
  }
  timing.nodes.forEach((node, index) => {
    const y = AXIS_HEIGHT + index * ROW_HEIGHT;
    const onPath = critical.has(node.id);
    const row = element("g", { class: `gantt-row status-${String(node.status).toLowerCase()}${onPath ? " critical" : ""}`, "data-id": node.id, "data-status": node.status, "data-critical": String(onPath) });
    if (onPath) row.append(element("rect", { x: 0, y, width, height: ROW_HEIGHT, class: "gantt-band" }));
    row.append(element("text", { x: 6, y: y + ROW_HEIGHT / 2 + 4, class: "gantt-label" }, `${onPath ? "◆ " : ""}${clip(`${node.id} · ${node.label ?? ""}`, 28)}`));
    if (typeof node.startedAt === "number") {
      const stop = endOf(node);
      const left = x(node.startedAt);
      const barWidth = Math.max(2, x(stop) - left);
      const bar = element("rect", { x: left, y: y + (ROW_HEIGHT - BAR_HEIGHT) / 2, width: barWidth, height: BAR_HEIGHT, rx: 3, class: "gantt-bar", "data-start": node.startedAt - origin, "data-duration": stop - node.startedAt });
      bar.append(element("title", {}, `${node.id}: +${formatMs(node.startedAt - origin)}, ${formatMs(stop - node.startedAt)}${node.status === "RUNNING" ? " so far" : ""}${onPath ? " (critical path)" : ""}`));
      row.append(bar);
      const after = left + barWidth + 6;
      const inside = after + 60 > width;
      // The duration beside the bar, or inside its end when the bar reaches the right edge.
      row.append(
        element("text", { x: inside ? left + barWidth - 6 : after, y: y + ROW_HEIGHT / 2 + 4, class: `gantt-duration${inside ? " inside" : ""}`, "text-anchor": inside ? "end" : "start" }, formatMs(stop - node.startedAt)),
      );
    } else {
      row.append(element("text", { x: LABEL_WIDTH + PAD, y: y + ROW_HEIGHT / 2 + 4, class: "gantt-duration" }, String(node.status).toLowerCase().replace("_", " ")));
    }
    svg.append(row);
  });
  container.append(svg);
  const running = timing.nodes.some(isRunning);
  const summary = document.createElement("p");
  summary.className = "muted gantt-summary";
  summary.id = "gantt-summary";
  summary.textContent =
    timing.criticalPath.length > 0 && timing.makespanMs !== null
      ? `◆ critical path: ${timing.criticalPath.join(" → ")} · ${formatMs(timing.criticalPathMs ?? 0)} of work in a makespan of ${formatMs(timing.makespanMs)}${running ? " so far" : ""}`
      : running
        ? "running…"
        : "";
  container.append(summary);
}
