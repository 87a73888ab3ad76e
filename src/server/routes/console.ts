import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";

/** The console's files: src/web, found from the source tree or from dist/. */
export function consoleDirectory(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.resolve(here, "../../web"), path.resolve(here, "../../../../src/web")];
  const found = candidates.find((directory) => existsSync(path.join(directory, "index.html")));
  if (!found) throw new Error(`the web console's files are missing (looked in ${candidates.join(", ")})`);
  return found;
}

/**
 * The console loads only its own files and talks only to its own origin; an answer's Markdown
 * is sanitised, and this keeps anything that slipped through from running or calling out.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The browser libraries the console loads, straight from their npm packages. */
const VENDOR: Record<string, string> = {
  "marked.js": "marked",
  "purify.js": "dompurify",
};

/** GET / and its files: the web console (no API key needed to load it; it asks for one). */
export async function registerConsoleRoutes(app: FastifyInstance): Promise<void> {
  await app.register(fastifyStatic, {
    root: consoleDirectory(),
    prefix: "/",
    index: ["index.html"],
    cacheControl: true,
    maxAge: 0,
    setHeaders: (response) => {
      response.header("content-security-policy", CONSOLE_CSP);
      response.header("x-content-type-options", "nosniff");
    },
  });
  const vendor = new Map<string, Buffer>();
  for (const [file, specifier] of Object.entries(VENDOR)) {
    const source = readFileSync(fileURLToPath(import.meta.resolve(specifier)), "utf8").replace(/\/\/# sourceMappingURL=\S+\s*$/, "");
    vendor.set(file, Buffer.from(source));
  }
  app.get("/vendor/:file", async (request, reply) => {
    const body = vendor.get((request.params as { file: string }).file);
    if (!body) return reply.callNotFound();
    return reply.type("text/javascript; charset=utf-8").header("cache-control", "public, max-age=86400").send(body);
  });
}
