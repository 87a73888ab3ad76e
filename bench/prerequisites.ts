/**
 * What each benchmark section needs from the machine beyond troupe itself. A section whose
 * prerequisite is missing is refused — named with what is missing and how to get it — instead of
 * running and reporting figures that only say the prerequisite was missing (crash trials without
 * bubblewrap read "0 / 20 completed, 260 effects missing"; the offline corpus "66/68").
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { Bubblewrap } from "../src/tools/sandbox/bubblewrap.js";
import { findPostgresBin } from "../src/testing/postgres-cluster.js";
import { repositoryRoot } from "./offline-corpus.js";

export interface Prerequisite {
  /** What is needed, as the refusal names it. */
  name: string;
  /** Why it is missing here, with how to get it; undefined when it is there. */
  missing(): Promise<string | undefined>;
}

/** A program on PATH. */
function onPath(name: string): boolean {
  return (process.env.PATH ?? "").split(path.delimiter).some((directory) => directory !== "" && existsSync(path.join(directory, name)));
}

const bubblewrap: Prerequisite = { name: "bubblewrap", missing: () => new Bubblewrap().unavailable() };

const python: Prerequisite = {
  name: "python3",
  missing: async () => (existsSync("/usr/bin/python3") || onPath("python3") ? undefined : "python3 is not installed (the sandbox runs the scripts of the section's tasks with it; Debian/Ubuntu: apt-get install python3)"),
};

const postgres: Prerequisite = {
  name: "Postgres",
  missing: async () => (findPostgresBin() ? undefined : "Postgres is not installed (no initdb/pg_ctl found: set PG_BIN, or apt-get install postgresql) — the section measures a throwaway cluster"),
};

/** A package the section imports that troupe itself does not depend on (a devDependency: `npm ci` installs it, `npm ci --omit=dev` does not). */
function peerPackage(name: string): Prerequisite {
  return {
    name,
    missing: async () => {
      try {
        import.meta.resolve(name);
        return undefined;
      } catch {
        return `the package ${name} is not installed (it is a devDependency of troupe: run npm ci without --omit=dev)`;
      }
    },
  };
}

/** A file of troupe's repository the section reads (the published package leaves tests and examples out). */
function repositoryFile(relative: string): Prerequisite {
  return {
    name: relative,
    missing: async () => {
      const file = path.join(repositoryRoot(), relative);
      return existsSync(file) ? undefined : `${relative} is not there (${file}): run the benchmark from a checkout of troupe's repository`;
    },
  };
}

/** Each section's prerequisites; a section not listed needs nothing beyond troupe's own dependencies. */
export const PREREQUISITES: Record<string, Prerequisite[]> = {
  tools: [bubblewrap, python],
  "crash-trials": [bubblewrap, python],
  "offline-corpus": [bubblewrap, python, repositoryFile("test/offline-corpus/cases.json")],
  eval: [repositoryFile("examples/evals/offline.jsonl")],
  peers: [peerPackage("@langchain/langgraph-supervisor"), peerPackage("@openai/agents")],
  queues: [postgres, peerPackage("graphile-worker")],
  fairness: [postgres],
  "scale-out": [postgres],
  operations: [postgres],
  scale: [postgres],
};

/** The sections (of those given) that must be refused here, each with what is missing. */
export async function refusals(sections: Iterable<string>): Promise<Map<string, string>> {
  const refused = new Map<string, string>();
  const known = new Map<Prerequisite, string | undefined>();
  for (const section of sections) {
    const reasons: string[] = [];
    for (const prerequisite of PREREQUISITES[section] ?? []) {
      if (!known.has(prerequisite)) known.set(prerequisite, await prerequisite.missing());
      const reason = known.get(prerequisite);
      if (reason !== undefined) reasons.push(reason);
    }
    if (reasons.length > 0) refused.set(section, reasons.join("; "));
  }
  return refused;
}
