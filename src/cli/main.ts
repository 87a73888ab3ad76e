#!/usr/bin/env node
import { CommanderError } from "commander";
import { errorMessage } from "../core/errors.js";
import { EXIT, exitCodeForError } from "./exit-codes.js";
import { err } from "./io.js";
import { createProgram } from "./program.js";

/**
 * A reader that stops early (`troupe tools list | head`) closes the pipe: the output ends there,
 * quietly, as with any shell tool, instead of an EPIPE stack trace.
 */
function endQuietlyOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(typeof process.exitCode === "number" ? process.exitCode : EXIT.completed);
  });
}

export async function main(argv: string[]): Promise<number> {
  endQuietlyOnClosedPipe(process.stdout);
  endQuietlyOnClosedPipe(process.stderr);
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
