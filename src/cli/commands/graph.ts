import type { Command } from "commander";
import { out } from "../io.js";

export function registerGraph(program: Command): void {
  program
    .command("graph")
    .description("print the orchestration graph as Mermaid")
    .action(async () => {
      const { orchestrationMermaid } = await import("../../graph/describe.js");
      out(await orchestrationMermaid());
    });
}
