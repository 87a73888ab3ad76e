import { execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

/** A Postgres cluster made for a test run or a benchmark, in a temporary folder, gone when stopped. */
export interface ThrowawayPostgres {
  /** `postgres://troupe@127.0.0.1:<port>/postgres` (trust authentication, loopback only). */
  url: string;
  port: number;
  directory: string;
  /** The URL of a database of that name, created when missing. */
  database(name: string): Promise<string>;
  /** Stops the server at once (`immediate`) or cleanly (`fast`), keeping the data. */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** Starts the stopped server again on the same port and data (a database restart). */
  start(): Promise<void>;
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
}

export interface ThrowawayPostgresOptions {
  /** Sync commits to disk (default false: a throwaway cluster trades durability for speed). */
  fsync?: boolean;
  maxConnections?: number;
  /** Where the cluster's folder is made (default the system's temporary folder). */
  parent?: string;
}

/** The folder holding initdb and pg_ctl: PG_BIN, then `pg_config --bindir`, then Debian's /usr/lib/postgresql/<newest>/bin. */
export function findPostgresBin(): string | undefined {
  const candidates: string[] = [];
  if (process.env.PG_BIN) candidates.push(process.env.PG_BIN);
  try {
    candidates.push(execFileSync("pg_config", ["--bindir"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
  } catch {
    // no pg_config on PATH
  }
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    for (const version of readdirSync(debian).sort((a, b) => Number(b) - Number(a))) candidates.push(path.join(debian, version, "bin"));
  }
  return candidates.find((bin) => existsSync(path.join(bin, "initdb")) && existsSync(path.join(bin, "pg_ctl")));
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * Postgres refuses to run as root: as root, the cluster's files belong to an unprivileged user
 * and its programs run as that user (util-linux's setpriv), with no supplementary groups — the
 * `postgres` user Debian's package creates, else `nobody`. (Not `nobody` when it can be helped:
 * the code sandbox runs scripts as `nobody` under a process limit, which the cluster's own
 * processes would count against.)
 */
function unprivileged(): { prefix: string[]; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const user of ["postgres", "nobody"]) {
    try {
      const uid = Number(execFileSync("id", ["-u", user], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
      const gid = Number(execFileSync("id", ["-g", user], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim());
      return { prefix: ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups"], uid, gid };
    } catch {
      // no such user: the next one
    }
  }
  throw new Error("running as root, and neither the postgres nor the nobody user exists to run Postgres as");
}

function run(command: string[], what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0] as string, command.slice(1), { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${what} failed (exit ${code}): ${stderr.trim().slice(-2000)}`))));
  });
}

/**
 * Starts a Postgres cluster in a new temporary folder, on 127.0.0.1 and a free port, as an
 * unprivileged user when run as root; trust authentication for the user `troupe`. Used by the
 * test suite's global setup and by the benchmarks: nothing is installed or downloaded here (the
 * system's `postgresql` package provides the programs; `.ci/system-packages.sh` installs it).
 */
export async function startThrowawayPostgres(options: ThrowawayPostgresOptions = {}): Promise<ThrowawayPostgres> {
  const bin = findPostgresBin();
  if (!bin) {
    throw new Error("Postgres is not installed (no initdb/pg_ctl found; set PG_BIN or install it: sudo apt-get install postgresql)");
  }
  const directory = mkdtempSync(path.join(options.parent ?? tmpdir(), "troupe-pg-"));
  const user = unprivileged();
  if (user) chownSync(directory, user.uid, user.gid);
  const as = (command: string[]): string[] => (user ? [...user.prefix, ...command] : command);
  const data = path.join(directory, "data");
  const log = path.join(directory, "postgres.log");
  try {
    await run(as([path.join(bin, "initdb"), "-D", data, "-U", "troupe", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]), "initdb");
  } catch (error) {
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    "-h 127.0.0.1",
    `-k ${directory}`,
    `-c fsync=${options.fsync ? "on" : "off"}`,
    `-c synchronous_commit=${options.fsync ? "on" : "off"}`,
    `-c full_page_writes=${options.fsync ? "on" : "off"}`,
    `-c max_connections=${options.maxConnections ?? 300}`,
  ].join(" ");
  const start = async (): Promise<void> => {
    try {
      await run(as([path.join(bin, "pg_ctl"), "-D", data, "-l", log, "-w", "-t", "60", "-o", settings, "start"]), "pg_ctl start");
    } catch (error) {
      const tail = existsSync(log) ? readFileSync(log, "utf8").slice(-2000) : "";
      throw new Error(`${(error as Error).message}\n${tail}`, { cause: error });
    }
  };
  let running = false;
  const stop = async (mode: "fast" | "immediate" = "fast"): Promise<void> => {
    if (!running) return;
    await run(as([path.join(bin, "pg_ctl"), "-D", data, "-m", mode, "-w", "-t", "60", "stop"]), "pg_ctl stop");
    running = false;
  };
  await start();
  running = true;
  const url = `postgres://troupe@127.0.0.1:${port}/postgres`;
  const made = new Set<string>(["postgres"]);
  return {
    url,
    port,
    directory,
    async database(name: string): Promise<string> {
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a database name: ${name}`);
      if (!made.has(name)) {
        const { default: pg } = await import("pg");
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
          if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${name}`);
        } finally {
          await client.end();
        }
        made.add(name);
      }
      return `postgres://troupe@127.0.0.1:${port}/${name}`;
    },
    stop,
    async start(): Promise<void> {
      if (running) return;
      await start();
      running = true;
    },
    async destroy(): Promise<void> {
      try {
        await stop("immediate");
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    },
  };
}
