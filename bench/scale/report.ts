import { formatNumber as number, formatTable } from "../support.js";
import { FLOOR, SCALE_TARGETS, type Curve, type ScaleReport } from "./scale.js";

const size = (value: number): string => (value >= 1_000_000 ? `${value / 1_000_000}M` : value >= 1_000 ? `${value / 1_000}k` : String(value));

function curveRows(curves: Curve[]): string {
  const sizes = [...new Set(curves.flatMap((curve) => curve.points.map((point) => point.size)))].sort((a, b) => a - b);
  return formatTable(
    ["backend", "figure", ...sizes.map(size), "largest ÷ smallest", "target", "verdict"],
    curves.map((curve) => [
      curve.backend,
      `${curve.figure} (${curve.unit})`,
      ...sizes.map((wanted) => number(curve.points.find((point) => point.size === wanted)?.value)),
      `${number(curve.ratio)}×`,
      [`≤ ${SCALE_TARGETS.maxRatio}×`, ...(curve.target ? [`≤ ${curve.target.max} ${curve.unit}`] : [])].join(", "),
      curve.figure.startsWith(FLOOR) ? `(reference) ${curve.flat && curve.target?.met !== false ? "within" : "beyond"}` : curve.flat && curve.target?.met !== false ? "met" : "MISSED",
    ]),
  );
}

/** The scale section of the report: one table of curves per part. */
export function scaleSection(report: ScaleReport): string {
  const part = (prefix: string[], curves: Curve[]): string[] => (curves.length === 0 ? [] : [...prefix, "", curveRows(curves), ""]);
  const figures = (names: string[]) => report.curves.filter((curve) => names.some((name) => curve.figure.startsWith(name)));
  return [
    `Scale (${report.size} sizes): cost as the work grows, on SQLite and on a throwaway Postgres (synced commits); each figure at each size and the ratio of the largest size's to the smallest's.`,
    "",
    ...part(
      [
        `  Queue depth: runs waiting across ${report.keys.toLocaleString("en-US")} API keys (half of them turns of a busy thread), bulk written, then one slot of a real`,
        "  `troupe serve` takes them (zero-latency scripted model): a run's finish to the next run's start, from the server's own records;",
        "  right after the bulk insert (Postgres: statistics as the insert left them) and in steady state (after ANALYZE).",
      ],
      figures(["pickup"]),
    ),
    ...part(
      [
        "  Watchers: SSE subscribers of one run, and spread over 100 runs, while the runs emit events; an event's write (its `at`) to its",
        "  arrival at a subscriber, p95 over every subscriber and event, and the server's resident memory with them connected; beside",
        "  them (`bare floor:`, not a target) the same bytes, schedule, subscribers and clients from a bare node:http server.",
      ],
      figures(["event delay", "server RSS", FLOOR]),
    ),
    ...(report.watchers.length === 0
      ? []
      : [
          "  Watchers in detail: the runs wait at their plan's approval while the subscribers connect (spread over the client processes), then",
          "  stream; delay = arrival (sub-ms client clock) − `at` (the server's whole-ms stamp of the append); spread = arrival − the same",
          "  event's earliest arrival (sub-ms, the part that grows with the subscribers); CPU = the serving process's while the answers streamed;",
          "  floor = the same measured on a bare node:http server writing pre-framed bytes straight to each socket, right after.",
          "",
          formatTable(
            ["backend", "runs", "subscribers", "clients", "events", "delay p50 (ms)", "delay p95 troupe / floor (ms)", "spread p95 troupe / floor (ms)", "server CPU troupe / floor (ms)", "RSS troupe / floor (MB)"],
            report.watchers.map((point) => [
              point.backend,
              String(point.runs),
              String(point.subscribers),
              String(point.clients),
              String(point.events),
              number(point.delayP50Ms),
              `${number(point.delayP95Ms)} / ${number(point.floor.delayP95Ms)}`,
              `${number(point.spreadP95Ms)} / ${number(point.floor.spreadP95Ms)}`,
              `${number(point.cpuMs)} / ${number(point.floor.cpuMs)}`,
              `${number(point.rssMb)} / ${number(point.floor.rssMb)}`,
            ]),
          ),
          "",
        ]),
    ...part(
      [
        "  History: finished runs with their events, checkpoints and stash values (clones of real runs), and a memory fact per ten runs;",
        "  each figure the median of repeated calls to a real server (the CLI's `runs show` as a process). One thread in ten keeps its",
        "  checkpoints, and every run a size's gc collects (all of them at 1M runs would take some 60 GB).",
        ...report.history.map(
          (point) => `    ${point.backend} ${size(point.runs)}: loaded in ${number(point.loadSeconds)} s (from the size before), ${number(point.bytes / 1024 ** 3)} GiB on disk`,
        ),
      ],
      report.curves.filter((curve) => !curve.figure.startsWith("pickup") && !curve.figure.startsWith("event delay") && !curve.figure.startsWith("server RSS") && !curve.figure.startsWith(FLOOR)),
    ),
    `  target: every curve within ${SCALE_TARGETS.maxRatio}× from the smallest size to the largest; pickup p95 ≤ ${SCALE_TARGETS.pickupP95Ms} ms at 100k waiting; event delay p95 ≤ ${SCALE_TARGETS.eventDelayP95Ms} ms at 1,000 subscribers → ${report.target.met ? "MET" : `NOT MET (${report.target.missed.join("; ")})`}`,
  ].join("\n");
}
