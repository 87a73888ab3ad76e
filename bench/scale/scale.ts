/**
 * The `scale` section: cost as the work grows, on SQLite and on a throwaway Postgres, each figure
 * a curve over the size with the ratio of the largest size's figure to the smallest's.
 *
 * - queue depth (1k → 100k waiting runs across 1,000 keys): a slot freeing to the next run
 *   starting, p50/p95, right after a bulk insert and in steady state (queue-depth.ts);
 * - watchers (1 → 1,000 SSE subscribers of one run, and of 100 runs): an event's write to its
 *   arrival, p95, and the server's RSS (watchers.ts);
 * - history (10k → 1M finished runs with their events): the task list's first page and a filtered
 *   page, a deep page by cursor, `runs show`, the console's home, memory search, gc per 10k runs
 *   (history.ts).
 *
 * `size` picks the sizes: `full` is the issue's, `quick` a run of a few minutes.
 */
import { measureHistory, type HistoryPoint } from "./history.js";
import { measureQueueDepth, type PickupFigures } from "./queue-depth.js";
import { measureWatchers, type WatcherPoint } from "./watchers.js";

/** The issue's targets: every curve within 2× smallest → largest; pickup p95 ≤ 100 ms at 100k waiting; event delay p95 ≤ 100 ms at 1,000 subscribers. */
export const SCALE_TARGETS = { maxRatio: 2, pickupP95Ms: 100, eventDelayP95Ms: 100 } as const;

export type ScaleSize = "quick" | "full";

export const SCALE_SIZES: Record<ScaleSize, { depths: number[]; watchers: number[]; history: number[] }> = {
  full: { depths: [1_000, 10_000, 100_000], watchers: [1, 10, 100, 1_000], history: [10_000, 100_000, 1_000_000] },
  quick: { depths: [1_000, 10_000], watchers: [1, 10, 100], history: [10_000, 50_000] },
};

export type Backend = "sqlite" | "postgres";
export type ScalePart = "queue" | "watchers" | "history";

export interface ScaleOptions {
  size: ScaleSize;
  /** Which parts to measure (all by default). */
  parts?: ScalePart[];
  /** Which backends (both by default). */
  backends?: Backend[];
  /** A Postgres database by name (made when missing), and a way to drop one once measured. */
  postgres: { database: (name: string) => Promise<string>; drop: (name: string) => Promise<void> };
  log: (line: string) => void;
  /** The watchers' client processes (4 by default). */
  watcherClients?: number;
}

/** One figure's curve: its value at each size, and the largest size's over the smallest's. */
export interface Curve {
  backend: Backend;
  figure: string;
  unit: string;
  points: Array<{ size: number; value: number }>;
  ratio: number;
  /** The absolute target at the largest size, where the issue sets one. */
  target?: { max: number; met: boolean };
  /** Within SCALE_TARGETS.maxRatio. */
  flat: boolean;
}

export interface ScaleReport {
  size: ScaleSize;
  keys: number;
  queue: Array<PickupFigures & { backend: Backend }>;
  watchers: Array<WatcherPoint & { backend: Backend }>;
  history: Array<HistoryPoint & { backend: Backend }>;
  curves: Curve[];
  target: { met: boolean; missed: string[] };
}

const KEYS = 1_000;
/** The prefix of a reference curve (the watchers' bare fan-out), reported beside troupe's and not counted against the target. */
export const FLOOR = "bare floor: ";
const BACKENDS: Backend[] = ["sqlite", "postgres"];

/** A curve from the points of one figure, sizes ascending. */
export function curveOf(backend: Backend, figure: string, unit: string, points: Array<{ size: number; value: number }>, absolute?: number): Curve {
  const sorted = [...points].sort((a, b) => a.size - b.size);
  const first = sorted[0]?.value ?? Number.NaN;
  const last = sorted.at(-1)?.value ?? Number.NaN;
  // A figure that rounds to nothing at the smallest size would make any ratio meaningless: 1 ms is the floor.
  const floor = unit === "ms" ? 1 : Number.EPSILON;
  const ratio = Math.max(last, floor) / Math.max(first, floor);
  return {
    backend,
    figure,
    unit,
    points: sorted,
    ratio,
    flat: ratio <= SCALE_TARGETS.maxRatio,
    ...(absolute === undefined ? {} : { target: { max: absolute, met: last <= absolute } }),
  };
}

export async function measureScale(options: ScaleOptions): Promise<ScaleReport> {
  const sizes = SCALE_SIZES[options.size];
  const parts = new Set(options.parts ?? ["queue", "watchers", "history"]);
  const report: ScaleReport = { size: options.size, keys: KEYS, queue: [], watchers: [], history: [], curves: [], target: { met: true, missed: [] } };
  const pickups = options.size === "full" ? 200 : 60;
  for (const backend of options.backends ?? BACKENDS) {
    if (parts.has("queue")) {
      options.log(`scale: queue depth on ${backend}…`);
      const points = await measureQueueDepth({ backend, depths: sizes.depths, keys: KEYS, pickups, database: options.postgres.database, drop: options.postgres.drop, log: options.log });
      report.queue.push(...points.map((point) => ({ ...point, backend })));
      for (const phase of ["after bulk insert", "steady state"] as const) {
        const of = points.filter((point) => point.phase === phase);
        const largest = sizes.depths.at(-1) === 100_000 ? SCALE_TARGETS.pickupP95Ms : undefined;
        report.curves.push(curveOf(backend, `pickup p50, ${phase}`, "ms", of.map((point) => ({ size: point.depth, value: point.p50Ms }))));
        report.curves.push(curveOf(backend, `pickup p95, ${phase}`, "ms", of.map((point) => ({ size: point.depth, value: point.p95Ms })), largest));
      }
    }
    if (parts.has("watchers")) {
      options.log(`scale: watchers on ${backend}…`);
      const points = await measureWatchers({ backend, counts: sizes.watchers, ...(options.watcherClients ? { clients: options.watcherClients } : {}), database: options.postgres.database, drop: options.postgres.drop, log: options.log });
      report.watchers.push(...points.map((point) => ({ ...point, backend })));
      for (const runs of [1, 100]) {
        const of = points.filter((point) => point.runs === runs);
        const largest = sizes.watchers.at(-1) === 1_000 ? SCALE_TARGETS.eventDelayP95Ms : undefined;
        report.curves.push(curveOf(backend, `event delay p95, ${runs === 1 ? "one run" : `${runs} runs`}`, "ms", of.map((point) => ({ size: point.subscribers, value: point.delayP95Ms })), largest));
        report.curves.push(curveOf(backend, `server RSS, ${runs === 1 ? "one run" : `${runs} runs`}`, "MB", of.map((point) => ({ size: point.subscribers, value: point.rssMb }))));
        report.curves.push(curveOf(backend, `${FLOOR}event delay p95, ${runs === 1 ? "one run" : `${runs} runs`}`, "ms", of.map((point) => ({ size: point.subscribers, value: point.floor.delayP95Ms }))));
      }
    }
    if (parts.has("history")) {
      options.log(`scale: history on ${backend}…`);
      const points = await measureHistory({ backend, sizes: sizes.history, database: options.postgres.database, drop: options.postgres.drop, log: options.log });
      report.history.push(...points.map((point) => ({ ...point, backend })));
      for (const figure of Object.keys(points[0]?.ms ?? {})) {
        report.curves.push(curveOf(backend, figure, "ms", points.map((point) => ({ size: point.runs, value: point.ms[figure] as number }))));
      }
    }
  }
  report.curves = report.curves.filter((curve) => curve.points.length > 0);
  // The floor is the machine's, shown beside troupe's curves: not a target of troupe's.
  report.target.missed = report.curves.filter((curve) => !curve.figure.startsWith(FLOOR) && (!curve.flat || curve.target?.met === false)).map((curve) => `${curve.backend} ${curve.figure}`);
  report.target.met = report.target.missed.length === 0;
  return report;
}
