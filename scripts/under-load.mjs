#!/usr/bin/env node
// Runs a command with CPU-bound processes beside it, to show that the tests wait on states and
// not on clocks: `node scripts/under-load.mjs [--burners N] [--] <command…>` (default two
// burners and `npm test`). Each burner is a child process spinning on the CPU at the same
// priority as the command; they stop when the command ends (or this script is interrupted), and
// the script exits with the command's status. It prints the load average before and after, the
// command's wall time and how much CPU the burners took, so a run's log says how loaded it was.
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  options: { burners: { type: "string", default: "2" } },
  allowPositionals: true,
});
const burnerCount = Number(values.burners);
if (!Number.isInteger(burnerCount) || burnerCount < 0 || burnerCount > 64) {
  console.error(`under-load: --burners must be a whole number from 0 to 64, not ${values.burners}`);
  process.exit(2);
}
const command = positionals.length > 0 ? positionals : ["npm", "test"];

// A burner spins until its parent goes (the pipe on stdin closes) or it is killed.
const SPIN = "process.stdin.on('close', () => process.exit(0)); process.stdin.resume(); const spin = () => { const end = Date.now() + 50; while (Date.now() < end); setImmediate(spin); }; spin();";

const load = () => loadavg().map((value) => value.toFixed(2)).join(" ");
console.log(`under-load: ${burnerCount} CPU-bound process(es) beside \`${command.join(" ")}\`; load average before: ${load()}`);

const burners = Array.from({ length: burnerCount }, () => spawn(process.execPath, ["-e", SPIN], { stdio: ["pipe", "ignore", "inherit"] }));
const started = process.hrtime.bigint();
const child = spawn(command[0], command.slice(1), { stdio: "inherit" });

const stopBurners = () => {
  for (const burner of burners) burner.kill("SIGKILL");
};
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    child.kill(signal);
  });
}

child.on("error", (error) => {
  stopBurners();
  console.error(`under-load: cannot start \`${command[0]}\`: ${error.message}`);
  process.exit(127);
});

child.on("exit", (code, signal) => {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(`under-load: \`${command.join(" ")}\` ended (${signal ?? `exit ${code}`}) after ${seconds.toFixed(0)} s beside ${burnerCount} CPU-bound process(es); load average after: ${load()}`);
  stopBurners();
  process.exit(code ?? 1);
});
