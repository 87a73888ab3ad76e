#!/usr/bin/env node
// The `troupe` command as npm installs it. Written for any Node.js (no syntax newer than the
// oldest release a machine may still have): npx ignores `engines`, so an old Node would otherwise
// load the CLI and fail deep inside a dependency. It refuses in one line, then loads the CLI.
var version = process.versions.node;
var major = Number(version.split(".")[0]);
if (!(major >= 22)) {
  process.stderr.write("troupe: needs Node.js 22 or newer; this is Node.js " + version + " (" + process.execPath + "): install a newer Node.js (https://nodejs.org) and run it again\n");
  process.exit(2);
}
import("../dist/src/cli/main.js");
