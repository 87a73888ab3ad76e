// The part of `npm run build` that is not TypeScript: what the built code reads at run time
// besides its own modules goes beside it in dist/src, so the package (which ships dist/src, not
// src) holds it — the migrations the store applies and the web console's files `troupe serve`
// serves. Each is replaced whole, so a file removed from src does not linger in dist.
import { chmodSync, cpSync, rmSync } from "node:fs";

for (const folder of ["store/migrations", "web"]) {
  rmSync(`dist/src/${folder}`, { recursive: true, force: true });
  cpSync(`src/${folder}`, `dist/src/${folder}`, { recursive: true });
}
// Tests and scripts run the built CLI directly.
chmodSync("dist/src/cli/main.js", 0o755);
