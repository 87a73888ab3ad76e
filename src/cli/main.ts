#!/usr/bin/env node
import { CommanderError } from "commander";
import { errorMessage } from "../core/errors.js";
import { EXIT, exitCodeForError } from "./exit-codes.js";
import { err } from "./io.js";
import { createProgram } from "./program.js";

export async function main(argv: string[]): Promise<number> {
  const program = createProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : EXIT.completed;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === "commander.helpDisplayed" || error.code === "commander.version" || error.code === "commander.help") return EXIT.completed;
      return EXIT.badInput;
    }
    err(`troupe: ${errorMessage(error).split("\n")[0]}`);
    return exitCodeForError(error);
  }
}

const code = await main(process.argv);
process.exitCode = code;
