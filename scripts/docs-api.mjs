// npm run docs:api: writes docs/http-api.md from the OpenAPI document of the app built in-process.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { readHttpApp } from "./docs-model.mjs";
import { renderHttpApi } from "./http-api-markdown.mjs";

const target = path.resolve(import.meta.dirname, "../docs/http-api.md");
const { document } = await readHttpApp();
writeFileSync(target, renderHttpApi(document));
console.log(`wrote ${path.relative(process.cwd(), target)} (${Object.keys(document.paths).length} paths)`);
