// Module hooks that let a script under scripts/ import troupe's TypeScript sources without a build:
// a relative `./x.js` import from a .ts file resolves to `./x.ts` when that exists (the sources
// import by their compiled names), and each .ts file is transpiled with the project's own
// TypeScript compiler (no type check: `npm run typecheck` does that).
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath, URL } from "node:url";
import ts from "typescript";

export async function resolve(specifier, context, nextResolve) {
  if (specifier.startsWith(".") && specifier.endsWith(".js") && context.parentURL?.endsWith(".ts")) {
    const url = new URL(specifier.slice(0, -3) + ".ts", context.parentURL);
    if (existsSync(fileURLToPath(url))) return { url: url.href, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:") || !url.endsWith(".ts")) return nextLoad(url, context);
  const source = readFileSync(fileURLToPath(url), "utf8");
  const { outputText } = ts.transpileModule(source, {
    fileName: fileURLToPath(url),
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023, verbatimModuleSyntax: true, sourceMap: false },
  });
  return { format: "module", source: outputText, shortCircuit: true };
}
