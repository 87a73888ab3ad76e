import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { envelope, makeApp } from "../server-helpers.js";
import { tempDir } from "../helpers.js";

describe("runtime grants", () => {
  it("a grant revoked while a run is in flight: the worker's next call is denied naming the revocation, and both changes are audited", async () => {
    const directory = tempDir();
    const model = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "research", "Write two notes")]),
        toolStep("s1", "file_write", { path: "one.txt", content: "first" }),
        // Before this call, the grant is revoked (on the first call's event).
        toolStep("s1", "file_write", { path: "two.txt", content: "second" }, { contains: "one.txt", delayMs: 200 }),
        finalStep("s1", "FAILED: could not write the second note", { contains: "grant_revoked" }),
        reviewStep(0.4),
        answerStep("one note written"),
      ],
    });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    try {
      // research reads; it may not write until given a grant.
      expect(troupe.policy.check("research", { name: "file_write", riskLevel: "medium" }, "WRITE", {}).allowed).toBe(false);
      const grant = await troupe.grants.add({ agent: "research", tool: "file_write", level: "WRITE" }, { by: "alice", reason: "notes for the report" });
      await expect(troupe.grants.add({ agent: "poet", tool: "file_write", level: "WRITE" }, { by: "alice" })).rejects.toMatchObject({ code: "unknown_agent" });
      await expect(troupe.grants.add({ agent: "research", tool: "teleport", level: "WRITE" }, { by: "alice" })).rejects.toMatchObject({ code: "unknown_tool" });
      await expect(troupe.grants.add({ agent: "research", tool: "file_write", level: "WRITE", expiresAt: Date.now() - 1 }, { by: "alice" })).rejects.toMatchObject({ code: "invalid_grant" });
      let revoked = false;
      const result = await troupe.run(
        { task: "write the notes" },
        {
          onEvent: (event) => {
            if (event.type === "tool-call" && event.tool === "file_write" && !revoked) {
              revoked = true;
              void troupe.grants.revoke(grant.id, { by: "bob", reason: "no more writes" });
            }
          },
        },
      );
      const calls = await troupe.store.audit.list({ runId: result.runId, tool: "file_write" });
      expect(calls.map((row) => [row.decision, row.status])).toEqual([
        ["allowed", "ok"],
        ["denied", "not_run"],
      ]);
      expect(calls[0]?.reason).toContain(grant.id);
      expect(calls[1]?.errorCode).toBe("grant_revoked");
      expect(calls[1]?.reason).toContain(`grant ${grant.id} (file_write, WRITE, granted by alice) was revoked by bob`);
      expect(calls[1]?.reason).toContain("no more writes");
      const changes = await troupe.store.audit.list({ tool: "troupe.grants" });
      expect(changes.map((row) => [row.decision, row.principal, row.agent])).toEqual([
        ["granted", "alice", "research"],
        ["revoked", "bob", "research"],
      ]);
      model.assertDone();
    } finally {
      await troupe.shutdown();
    }
  });

  it("an expired grant is named in the denial, not the level another grant holds", async () => {
    const directory = tempDir();
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    try {
      const grant = await troupe.grants.add({ agent: "research", tool: "file_write", level: "WRITE", expiresAt: Date.now() + 150 }, { by: "alice" });
      expect((await troupe.callTool("file_write", { path: "a.txt", content: "x" }, { agent: "research" })).ok).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const denied = await troupe.callTool("file_write", { path: "b.txt", content: "x" }, { agent: "research" });
      expect(denied).toMatchObject({ ok: false, error: { code: "grant_expired" } });
      expect(!denied.ok && denied.error.message).toContain(`grant ${grant.id} (file_write, WRITE, granted by alice) expired at`);
    } finally {
      await troupe.shutdown();
    }
  });

  it("/api/v1/grants needs an admin key; an admin's grant applies at once and is audited with the admin's name", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:a-key,ops:o-key", admins: "ops" } });
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    const refused = await app.app.inject({ method: "POST", url: "/api/v1/grants", headers: as("a-key"), payload: { agent: "research", tool: "file_write", level: "WRITE" } });
    expect([refused.statusCode, envelope(refused).code]).toEqual([403, "admin_required"]);
    const made = await app.app.inject({ method: "POST", url: "/api/v1/grants", headers: as("o-key"), payload: { agent: "research", tool: "file_write", level: "WRITE", reason: "report" } });
    expect(made.statusCode).toBe(201);
    const id = envelope<{ id: string }>(made).data.id;
    const listed = envelope<{ items: Array<{ id: string | null; source: string }> }>(await app.app.inject({ method: "GET", url: "/api/v1/grants?agent=research", headers: as("o-key") })).data.items;
    expect(listed.some((item) => item.id === id && item.source === "runtime")).toBe(true);
    expect(listed.some((item) => item.source === "role")).toBe(true);
    const bad = await app.app.inject({ method: "POST", url: "/api/v1/grants", headers: as("o-key"), payload: { agent: "research", tool: "file_write", level: "SUPER" } });
    expect([bad.statusCode, envelope(bad).code]).toEqual([400, "level_invalid"]);
    const gone = await app.app.inject({ method: "DELETE", url: `/api/v1/grants/${id}?reason=done`, headers: as("o-key") });
    expect(envelope<{ revoked_by: string }>(gone).data.revoked_by).toBe("ops");
    expect((await app.app.inject({ method: "DELETE", url: "/api/v1/grants/g-nope", headers: as("o-key") })).statusCode).toBe(404);
    const audited = await app.troupe.store.audit.list({ tool: "troupe.grants" });
    expect(audited.map((row) => [row.decision, row.principal])).toEqual([
      ["granted", "ops"],
      ["revoked", "ops"],
    ]);
  });
});
