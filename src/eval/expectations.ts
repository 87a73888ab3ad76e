import { isTroupeError } from "../core/errors.js";
import { compileLinearRegExp } from "../core/linear-regex.js";
import type { RunResult } from "../core/run.js";
import { truncate } from "../core/text.js";
import { readContainedFile } from "../tools/workspace-read.js";
import type { Failure, JudgeOutcome } from "./results.js";
import type { EvalCase } from "./suite.js";

/** Files larger than this are not read for a comparison (the expectation fails, saying so). */
const MAX_FILE_BYTES = 16 * 1024 * 1024;

const shown = (text: string): string => JSON.stringify(truncate(text, 200));

/** One trailing newline (`\n` or `\r\n`) off, as the suite format compares files. */
export function trimOneNewline(text: string): string {
  return text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text;
}

/** A workspace file's text, or why there is none (`missing`, or another reason in words). */
async function readText(workspace: string, file: string): Promise<{ text: string } | { missing: true } | { problem: string }> {
  try {
    const { bytes } = await readContainedFile(workspace, file, MAX_FILE_BYTES);
    return { text: bytes.toString("utf8") };
  } catch (error) {
    if (isTroupeError(error) && error.code === "not_found") return { missing: true };
    return { problem: (error as Error).message };
  }
}

/**
 * Checks a case's run against its expectations, in the order the suite format lists them.
 * A status is always expected: `completed` unless the case says otherwise.
 */
export async function checkExpectations(evalCase: EvalCase, result: RunResult, workspace: string): Promise<Failure[]> {
  const expect = evalCase.expect ?? {};
  const failures: Failure[] = [];
  const fail = (expectation: string, message: string): void => {
    failures.push({ expectation, message });
  };
  const wanted = expect.status ?? "completed";
  if (result.status !== wanted) {
    const unfinished = result.trace.unfinished.map((entry) => `${entry.id} ${entry.status}${entry.failureKind && entry.failureKind !== "error" ? ` (${entry.failureKind})` : ""}`);
    const why = unfinished.length > 0 ? `; not done: ${unfinished.join(", ")}` : result.error ? `: ${truncate(result.error, 200)}` : "";
    fail("status", `expected ${wanted}, got ${result.status} (stop reason ${result.stopReason ?? "none"})${why}`);
  }
  const answer = result.answer ?? "";
  for (const phrase of expect.answer_includes ?? []) if (!answer.includes(phrase)) fail("answer_includes", `the answer does not include ${shown(phrase)}`);
  for (const phrase of expect.answer_excludes ?? []) if (answer.includes(phrase)) fail("answer_excludes", `the answer includes ${shown(phrase)}`);
  if (expect.answer_matches !== undefined && !compileLinearRegExp(expect.answer_matches).test(answer)) fail("answer_matches", `the answer does not match /${truncate(expect.answer_matches, 200)}/`);
  for (const [file, expected] of Object.entries(expect.files ?? {})) {
    const actual = await readText(workspace, file);
    if (expected === null) {
      if (!("missing" in actual)) fail("files", `${file} should not exist, but it does`);
    } else if ("missing" in actual) fail("files", `${file} was not written`);
    else if ("problem" in actual) fail("files", `${file} could not be read: ${actual.problem}`);
    else if (trimOneNewline(actual.text) !== trimOneNewline(expected)) fail("files", `${file} holds ${shown(actual.text)}, expected ${shown(expected)}`);
  }
  for (const [file, phrases] of Object.entries(expect.file_includes ?? {})) {
    const actual = await readText(workspace, file);
    if ("missing" in actual) fail("file_includes", `${file} was not written`);
    else if ("problem" in actual) fail("file_includes", `${file} could not be read: ${actual.problem}`);
    else for (const phrase of phrases) if (!actual.text.includes(phrase)) fail("file_includes", `${file} does not include ${shown(phrase)}`);
  }
  if (expect.max_model_calls !== undefined && result.metrics.llmCalls > expect.max_model_calls) {
    fail("max_model_calls", `${result.metrics.llmCalls} model calls, more than ${expect.max_model_calls}`);
  }
  if (expect.max_cost_usd !== undefined && result.metrics.costUsd > expect.max_cost_usd) {
    fail("max_cost_usd", `cost $${result.metrics.costUsd.toFixed(4)}, more than $${expect.max_cost_usd}`);
  }
  return failures;
}

/** The judge's verdict as a failure, when it judged and the score fell short (not judged is no failure: see the README). */
export function judgeFailure(outcome: JudgeOutcome): Failure | undefined {
  if (!outcome.judged || outcome.passed) return undefined;
  return { expectation: "judge", message: `scored ${outcome.score ?? 0} (below ${outcome.minScore}): ${outcome.reason}` };
}
