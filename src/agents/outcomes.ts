import { LIMITS } from "../core/limits.js";
import type { Artifact, FailureKind, MissingFiles } from "../core/plan.js";
import { isMappedReport, type MappedExecutionReport } from "../core/map-report.js";
import { describeSources, isUntrusted, type Label } from "../core/provenance.js";
import { spotlight } from "../core/spotlight.js";
import { preview, truncate } from "../core/text.js";
import { scaled } from "./prompt-budget.js";

/** A subtask outcome as the critic and the synthesizer see it. */
export interface OutcomeView {
  id: string;
  label: string;
  agent: string;
  status: string;
  attempts: number;
  /** The subtasks whose results it took (absent when none). */
  dependsOn?: string[];
  summary?: string;
  error?: string;
  /** Why a failed subtask did not finish (`unable`: beyond its worker; `rejected`: by a person; `empty`: no result). */
  failureKind?: FailureKind;
  /** The workspace files it wrote or deleted, as checked on disk. */
  files?: ArtifactView[];
  /** Size of the stashed result, in bytes. */
  bytes?: number;
  /** A mapped subtask's items: counts, and a bounded selection (failed items first). */
  items?: {
    overallStatus: MappedExecutionReport["overallStatus"];
    total: number;
    succeeded: number;
    failed: number;
    listed: Array<{ index: number; status: "success" | "error"; input: string; output?: string; error?: string }>;
    notListed: number;
  };
  /** The beginning of the stashed result (JSON), when it says more than the summary. */
  extract?: string;
  /** Its untrusted sources, when it has any: its texts are then delimited and marked as data. */
  untrusted?: string;
}

/** A file as a prompt shows it: what happened to it, its size, and whether it holds what it was meant to. */
export interface ArtifactView {
  path: string;
  action: Artifact["action"];
  bytes?: number;
  /** Where its content was meant to come from, that source's size, and whether the file holds it exactly. */
  source?: string;
  sourceBytes?: number;
  identical?: boolean;
  problem?: string;
}

/** An outcome with the stashed result behind it, from which a prompt takes bounded extracts. */
export interface OutcomeSource extends Omit<OutcomeView, "items" | "extract" | "files" | "untrusted"> {
  value?: unknown;
  artifacts?: Artifact[];
  /** Files its map's items were to make and the workspace does not hold. */
  missingFiles?: MissingFiles;
  /** Where its result came from (absent: trusted). */
  provenance?: Label;
}

function artifactView(artifact: Artifact): ArtifactView {
  const view: ArtifactView = { path: artifact.path, action: artifact.action };
  if (artifact.bytes !== undefined) view.bytes = artifact.bytes;
  if (artifact.source) {
    view.source = artifact.source.from;
    view.sourceBytes = artifact.source.bytes;
    view.identical = artifact.source.identical;
  }
  if (artifact.problem !== undefined) view.problem = artifact.problem;
  return view;
}

export interface ExtractSizes {
  /** Characters of a result's extract at full detail (0: none). */
  extractChars: number;
  /** Successful items listed at full detail (failed ones are always listed first). */
  successItems: number;
  /**
   * Successful items listed of a map whose results a later subtask took (its figures are in
   * that subtask's outcome): a sample, not the list.
   */
  usedItems: number;
}

/**
 * How much the critic sees (enough to judge) and the synthesizer (enough to answer from). The
 * synthesizer's bound on a map: every failed item up to 20, and 40 successful items of a map
 * whose results nothing else took (the answer states them), 3 of one whose results a later
 * subtask took; the rest are counted, never listed.
 */
export const CRITIC_EXTRACTS: ExtractSizes = { extractChars: 1_000, successItems: 5, usedItems: 5 };
export const SYNTHESIZER_EXTRACTS: ExtractSizes = { extractChars: 3_000, successItems: 40, usedItems: 3 };

/** Outcomes as a prompt's JSON: one outcome a line (indenting every field costs a token a line, and says nothing). */
export function outcomesJson(views: readonly OutcomeView[]): string {
  return views.length === 0 ? "[]" : `[\n${views.map((view) => JSON.stringify(view)).join(",\n")}\n]`;
}

function itemsView(report: MappedExecutionReport, detail: number, successItems: number): OutcomeView["items"] {
  const inputChars = scaled(200, detail, 40);
  const outputChars = Math.round(300 * detail);
  const errorChars = scaled(300, detail, 60);
  const failed = report.results.flatMap((result, index) => (result.status === "error" ? [{ result, index }] : []));
  const succeeded = report.results.flatMap((result, index) => (result.status === "success" ? [{ result, index }] : []));
  const chosen = [...failed.slice(0, scaled(20, detail, 3)), ...succeeded.slice(0, Math.round(successItems * detail))].sort((a, b) => a.index - b.index);
  const listed = chosen.map(({ result, index }) => {
    const item: NonNullable<OutcomeView["items"]>["listed"][number] = { index, status: result.status, input: preview(result.input, inputChars) };
    if (result.status === "success" && outputChars > 0) item.output = preview(result.output, outputChars);
    if (result.error !== undefined) item.error = truncate(result.error, errorChars);
    return item;
  });
  return {
    overallStatus: report.overallStatus,
    total: report.results.length,
    succeeded: succeeded.length,
    failed: failed.length,
    listed,
    notListed: report.results.length - listed.length,
  };
}

// A prompt is rendered at several levels of detail from the same values: measure each once.
const jsonTexts = new WeakMap<object, string>();
const reports = new WeakMap<object, boolean>();

function jsonText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  let text = jsonTexts.get(value);
  if (text === undefined) {
    text = JSON.stringify(value) ?? "null";
    jsonTexts.set(value, text);
  }
  return text;
}

function isReport(value: unknown): value is MappedExecutionReport {
  if (typeof value !== "object" || value === null) return false;
  let known = reports.get(value);
  if (known === undefined) {
    known = isMappedReport(value);
    reports.set(value, known);
  }
  return known;
}

/**
 * The outcomes as a prompt shows them at a level of detail: summaries and errors cut, a mapped
 * subtask's items listed (failed first) with previews, other results as a short extract. Sizes
 * never depend on how large the stashed results are.
 */
export function renderOutcomes(sources: readonly OutcomeSource[], detail: number, sizes: ExtractSizes): OutcomeView[] {
  const summaryChars = scaled(LIMITS.previewChars, detail, 80);
  const errorChars = scaled(LIMITS.previewChars, detail, 100);
  const fileCount = scaled(LIMITS.artifactsKept, detail, 3);
  const used = new Set(sources.flatMap((source) => source.dependsOn ?? []));
  return sources.map(({ value, artifacts, provenance, ...source }) => {
    const successItems = used.has(source.id) ? sizes.usedItems : sizes.successItems;
    const view = renderOutcome(source, value, artifacts, detail, sizes, { summaryChars, errorChars, fileCount, successItems });
    return isUntrusted(provenance) ? spotlightView(view, provenance) : view;
  });
}

/** Whether any outcome came from untrusted data (its role's system prompt then says what marked data is). */
export function anyUntrusted(sources: readonly OutcomeSource[]): boolean {
  return sources.some((source) => isUntrusted(source.provenance));
}

/** An untrusted outcome's texts delimited and marked as data. */
function spotlightView(view: OutcomeView, label: Label): OutcomeView {
  const marked: OutcomeView = { ...view, untrusted: describeSources(label) };
  if (view.summary !== undefined) marked.summary = spotlight(view.summary, label);
  if (view.error !== undefined) marked.error = spotlight(view.error, label);
  if (view.extract !== undefined) marked.extract = spotlight(view.extract, label);
  if (view.items) {
    marked.items = {
      ...view.items,
      listed: view.items.listed.map((item) => ({
        ...item,
        input: spotlight(item.input, label),
        ...(item.output !== undefined ? { output: spotlight(item.output, label) } : {}),
        ...(item.error !== undefined ? { error: spotlight(item.error, label) } : {}),
      })),
    };
  }
  return marked;
}

/** One outcome at a level of detail (before any marking). */
function renderOutcome(
  source: Omit<OutcomeSource, "value" | "artifacts" | "provenance">,
  value: unknown,
  artifacts: Artifact[] | undefined,
  detail: number,
  sizes: ExtractSizes,
  { summaryChars, errorChars, fileCount, successItems }: { summaryChars: number; errorChars: number; fileCount: number; successItems: number },
): OutcomeView {
  const view: OutcomeView = { ...source };
  if (artifacts && artifacts.length > 0) view.files = artifacts.slice(0, fileCount).map(artifactView);
  if (source.summary !== undefined) view.summary = truncate(source.summary, summaryChars);
  if (source.error !== undefined) view.error = truncate(source.error, errorChars);
  if (value === undefined) return view;
  if (isReport(value)) {
    view.items = itemsView(value, detail, successItems);
    return view;
  }
  const extractChars = Math.round(sizes.extractChars * detail);
  if (extractChars > 0 && source.status === "done") {
    const text = truncate(jsonText(value), extractChars);
    if (text !== source.summary) view.extract = text;
  }
  return view;
}
