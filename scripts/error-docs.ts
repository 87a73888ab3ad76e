/**
 * Writes docs/errors.md from the error catalogue (`npm run docs:errors`, from the package root).
 * `--check` writes nothing and exits 1 when the page is out of date.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { renderErrorsPage } from "../src/core/error-docs.js";

const page = path.resolve("docs/errors.md");
const text = renderErrorsPage();
const current = await readFile(page, "utf8").catch(() => "");
if (process.argv.includes("--check")) {
  if (current !== text) {
    console.error(`${page} is out of date: run npm run docs:errors`);
    process.exitCode = 1;
  }
} else if (current !== text) {
  const temporary = `${page}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, page);
  console.log(`wrote ${page}`);
} else {
  console.log(`${page} is up to date`);
}
