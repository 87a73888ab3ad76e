import { describe, expect, it } from "vitest";
import { makeApp } from "../server-helpers.js";

// The console is served as static files from src/web (dist/src/web in the package), its task page
// from modules in a folder of their own (src/web/task/): every nested file is served with the
// console's headers, and nothing outside the folder is, however the path is spelled.

describe("the console's files", () => {
  it("serves the task page's modules from their folder, as JavaScript under the console's CSP", async () => {
    const { app } = await makeApp({ config: { apiKeys: "alice:key-alice-123" } });
    for (const url of ["/task-page.js", "/task/store.js", "/task/approval.js", "/task/describe.js"]) {
      const response = await app.inject({ method: "GET", url });
      expect([url, response.statusCode, response.headers["content-type"]]).toEqual([url, 200, expect.stringMatching(/^(text|application)\/javascript/)]);
      expect(response.headers["content-security-policy"]).toContain("script-src 'self'");
      expect(response.headers["x-content-type-options"]).toBe("nosniff");
    }
    expect((await app.inject({ method: "GET", url: "/task/store.js" })).body).toContain("export function createTaskStore");
    expect((await app.inject({ method: "GET", url: "/task/missing.js" })).statusCode).toBe(404);
  });

  it("serves nothing outside the console's folder: '..' in any spelling is refused", async () => {
    const { app } = await makeApp({ config: { apiKeys: "alice:key-alice-123" } });
    const escapes = [
      "/../package.json",
      "/task/../../../package.json",
      "/task/%2e%2e/%2e%2e/%2e%2e/package.json",
      "/task/..%2f..%2f..%2fpackage.json",
      "/task/%2E%2E%2F%2E%2E%2F%2E%2E%2Fpackage.json",
      "/task/..%5c..%5c..%5cpackage.json",
      "/task/....//....//package.json",
      "/%2e%2e/%2e%2e/src/server/app.ts",
      "/task/%252e%252e/%252e%252e/%252e%252e/package.json",
      "/task/store.js%00.html",
    ];
    for (const url of escapes) {
      const response = await app.inject({ method: "GET", url });
      expect([url, response.statusCode >= 400 && response.statusCode < 500]).toEqual([url, true]);
      expect(response.body).not.toContain('"name": "troupe"');
      expect(response.body).not.toContain("createApp");
    }
  });
});
