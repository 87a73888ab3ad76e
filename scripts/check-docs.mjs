// Part of `npm run lint`: the docs under docs/ cover what the code offers.
// - docs/http-api.md is what `npm run docs:api` writes from the OpenAPI document today;
// - every HTTP route Fastify registers is documented as `METHOD /path` somewhere in docs/
//   (routes outside the OpenAPI document — /mcp, A2A, /health/live, the console — by hand);
// - every CLI command and subcommand has a `### \`troupe <command>\`` section in docs/cli.md that
//   names each of its long options;
// - every key the config file's zod schemas accept is named in a page (as `key`, "key" or .key);
// - every TROUPE_* variable the shipped sources read is in docs/configuration.md;
// - the OpenAPI document passes Redocly's recommended rules (redocly.yaml), warnings included;
// - every path a page of docs/ or the README names exists, and every link between them lands on a
//   page and heading that exist (scripts/doc-paths.ts).
// Fails with the missing names and the rules broken.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { readCli, readConfigKeys, readEnvironmentVariables, readHttpApp } from "./docs-model.mjs";
import { missingPaths } from "./doc-paths.ts";
import { renderHttpApi } from "./http-api-markdown.mjs";

const root = path.resolve(import.meta.dirname, "..");
const docsDir = path.join(root, "docs");
const pages = readdirSync(docsDir).filter((name) => name.endsWith(".md")).map((name) => ({ name, text: readFileSync(path.join(docsDir, name), "utf8") }));
const allText = pages.map((page) => page.text).join("\n");
const problems = [];

const { document, routes } = await readHttpApp();
const current = readFileSync(path.join(docsDir, "http-api.md"), "utf8");
if (current !== renderHttpApi(document)) problems.push("docs/http-api.md is not current: run `npm run docs:api` and commit it");

// Automatic HEAD routes add nothing to document; a route answering every method (the A2A
// transports hand every method to the SDK) is documented by its path alone.
const IMPLIED = new Set(["HEAD"]);
for (const route of routes) {
  const url = route.url.replace(/:(\w+)/g, "{$1}").replace(/\/\*$/, "");
  const shown = url === "" ? "/" : url;
  const methods = route.methods.filter((method) => !IMPLIED.has(method));
  if (methods.length === 0) continue;
  if (methods.length > 4) {
    if (!allText.includes(`${shown}`)) problems.push(`route ${shown} (any method) is not documented in docs/`);
    continue;
  }
  for (const method of methods) {
    if (!allText.includes(`${method} ${shown}`)) problems.push(`route ${method} ${shown} is not documented in docs/ (write it as \`${method} ${shown}\`)`);
  }
}

// Operations that can answer no 4xx, which Redocly's operation-4xx-response asks of every operation.
const NO_4XX = {
  "#/paths/~1health/get/responses": "GET /health is open and takes nothing: it answers 200 or 503",
  "#/paths/~1api~1v1~1health/get/responses": "GET /api/v1/health is open and takes nothing: it answers 200 or 503",
  "#/paths/~1.well-known~1agent-card.json/get/responses": "the agent card is open and takes nothing but A2A-Version, which only picks the card's version",
};
const lintDir = mkdtempSync(path.join(os.tmpdir(), "troupe-openapi-"));
try {
  const file = path.join(lintDir, "openapi.json");
  writeFileSync(file, JSON.stringify(document, null, 1));
  let output;
  try {
    output = execFileSync(path.join(root, "node_modules/.bin/redocly"), ["lint", file, "--config", path.join(root, "redocly.yaml"), "--format=json"], {
      encoding: "utf8",
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    // Redocly exits 1 when a rule fails as an error; the report is on stdout all the same.
    output = error.stdout;
  }
  const report = JSON.parse(output);
  for (const problem of report.problems) {
    const pointer = problem.location?.[0]?.pointer ?? "";
    if (problem.ruleId === "operation-4xx-response" && NO_4XX[pointer]) continue;
    problems.push(`OpenAPI (Redocly ${problem.ruleId}, ${problem.severity}): ${problem.message} at ${pointer}`);
  }
} finally {
  rmSync(lintDir, { recursive: true, force: true });
}

const cliPage = pages.find((page) => page.name === "cli.md")?.text ?? "";
if (!cliPage) problems.push("docs/cli.md is missing");
/** The text of the section under `### \`troupe <name>\`` (up to the next heading of level 2 or 3). */
function sectionOf(name) {
  const heading = `### \`troupe ${name}\``;
  const start = cliPage.indexOf(`\n${heading}`);
  if (start < 0) return undefined;
  const rest = cliPage.slice(start + heading.length + 1);
  const end = rest.search(/\n##?#? /);
  return end < 0 ? rest : rest.slice(0, end);
}
for (const command of await readCli()) {
  // A command that only groups subcommands (`troupe runs`) is documented by theirs.
  if (command.hasSubcommands && command.options.length === 0) continue;
  const section = sectionOf(command.name);
  if (section === undefined) {
    problems.push(`command \`troupe ${command.name}\` has no section in docs/cli.md (a heading ### \`troupe ${command.name}\`)`);
    continue;
  }
  for (const option of command.options) {
    if (option.long && !section.includes(option.long)) problems.push(`option ${option.long} of \`troupe ${command.name}\` is not in its section of docs/cli.md`);
  }
}

// Pages written by hand: the generated reference and the CLI page do not count for config keys.
const prose = pages.filter((page) => page.name !== "http-api.md" && page.name !== "cli.md").map((page) => page.text).join("\n");
for (const key of await readConfigKeys()) {
  const leaf = key.replace(/(\.<id>|\[\])+$/, "").split(/\.|\[\]/).filter((part) => part && part !== "<id>").pop();
  if (leaf && !new RegExp(`[\`".]${leaf}[\`"\\s:,)]`).test(prose)) problems.push(`config key ${key} is not named in docs/ (as \`${leaf}\`)`);
}
const configuration = pages.find((page) => page.name === "configuration.md")?.text ?? "";
for (const name of readEnvironmentVariables()) {
  if (!configuration.includes(name)) problems.push(`environment variable ${name} is not in docs/configuration.md`);
}

// Paths and links: the repository's files (tracked, and new ones not ignored) for bare names.
const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" }).split("\n").filter(Boolean);
const readme = { name: "../README.md", text: readFileSync(path.join(root, "README.md"), "utf8") };
for (const page of [...pages, readme]) {
  problems.push(...missingPaths(page.text, path.relative(root, path.join(docsDir, page.name)), root, files, { bareNames: true }));
}

if (problems.length > 0) {
  console.error(`docs check: ${problems.length} problem(s)\n${problems.map((problem) => `  - ${problem}`).join("\n")}`);
  process.exitCode = 1;
} else {
  console.log(`docs check: ${routes.length} routes, the CLI's commands and flags, the config keys and the environment variables documented; every path and link the pages name there; docs/http-api.md current; the OpenAPI document clean of Redocly's recommended rules`);
}
