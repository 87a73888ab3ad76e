import { describe, expect, it } from "vitest";
import { chooseAgent, fittingAgents, missingFor } from "./agent-fit.js";
import { type PlannedSubtask, validatePlan } from "./plan.js";

const files = { readers: ["file_read", "file_list"], writers: ["file_write", "file_append"] };
const profiles = [
  { name: "research", tools: ["web_search", "file_read"], capabilities: ["search", "read"] },
  { name: "execute", tools: ["calculator", "file_read", "file_write"], capabilities: ["compute", "files"] },
  { name: "notes", tools: ["file_read", "file_write"], capabilities: ["files"] },
];
const subtask = (fields: Partial<PlannedSubtask>): PlannedSubtask => ({ id: "s1", label: "do it", agent: "research", dependsOn: [], args: {}, ...fields });

describe("agents fit by the tools a subtask needs and its capability", () => {
  it("needs its direct tool, the tools the plan names, and a writer for what it writes", () => {
    const [research] = profiles;
    expect(missingFor(research!, subtask({ tool: "file_write" }), files)).toEqual(["cannot use file_write"]);
    expect(missingFor(research!, subtask({ tools: ["web_search", "calculator"] }), files)).toEqual(["cannot use calculator"]);
    expect(missingFor(research!, subtask({ writes: ["out.txt"] }), files)).toEqual(["declares writes but has no tool that writes files (file_write, file_append)"]);
    expect(missingFor(research!, subtask({ reads: ["in.txt"], capability: "compute" }), files)).toEqual(['does not have the capability "compute"']);
    expect(fittingAgents(profiles, subtask({ capability: "files", writes: ["a.txt"] }), files).map((agent) => agent.name)).toEqual(["execute", "notes"]);
  });

  it("gives the subtask to the least busy that fits: fewest running, then fewest so far, then the planner's pick", () => {
    const candidates = fittingAgents(profiles, subtask({ capability: "files" }), files);
    const load = (running: Record<string, number>, assigned: Record<string, number> = {}) => (agent: string) => ({ running: running[agent] ?? 0, assigned: assigned[agent] ?? 0 });
    expect(chooseAgent(candidates, subtask({ agent: "notes", capability: "files" }), load({}))?.agent).toBe("notes");
    expect(chooseAgent(candidates, subtask({ agent: "notes", capability: "files" }), load({ notes: 1 }))?.agent).toBe("execute");
    expect(chooseAgent(candidates, subtask({ agent: "notes", capability: "files" }), load({ notes: 1, execute: 1 }, { notes: 2, execute: 1 }))?.agent).toBe("execute");
    expect(chooseAgent(candidates, subtask({ agent: "notes", capability: "files" }), load({}))?.candidates).toEqual([
      { agent: "execute", running: 0, assigned: 0 },
      { agent: "notes", running: 0, assigned: 0 },
    ]);
    expect(chooseAgent(candidates, subtask({}), load({}))).toBeUndefined();
  });

  it("makes the plan check refuse an agent without the tools, naming those that have them", () => {
    const rules = { agents: profiles.map((profile) => profile.name), tools: ["web_search", "file_read", "file_write", "calculator"], profiles, files };
    expect(validatePlan([subtask({ tool: "file_write" })], rules)).toEqual(['subtask s1: agent "research" cannot use file_write (its tools: web_search, file_read); agents that can: execute, notes']);
    expect(validatePlan([subtask({ capability: "flying" })], rules)).toEqual(['subtask s1: no agent has the capability "flying" (known: search, read, compute, files)']);
    expect(validatePlan([subtask({ capability: "read", tools: ["calculator"] })], rules)).toEqual([
      'subtask s1: no agent with the capability "read" has the tools it needs: research cannot use calculator',
    ]);
    expect(validatePlan([subtask({ tools: ["rm"] })], rules)).toEqual(['subtask s1: unknown tool "rm" in tools (known: web_search, file_read, file_write, calculator)']);
    expect(validatePlan([subtask({ capability: "files", tools: ["file_write"] })], rules)).toEqual([]);
  });
});
