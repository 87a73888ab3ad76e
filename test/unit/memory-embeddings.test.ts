import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseEnv } from "../../src/config/env.js";
import { memoryNamespace } from "../../src/core/memory.js";
import { OfflineChatModel } from "../../src/providers/offline/offline-chat-model.js";
import { Troupe } from "../../src/runtime/engine.js";
import { FakeOpenAIServer } from "../../src/testing/fake-openai-server.js";
import { tempDir } from "../helpers.js";

const servers: FakeOpenAIServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

const alice = memoryNamespace({ kind: "key", name: "alice" });

async function engineWith(env: Record<string, string>, directory = tempDir()): Promise<Troupe> {
  return Troupe.create({ env: parseEnv({ ...env, TROUPE_PROVIDER: "offline" }), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace"), config: {} });
}

describe("semantic retrieval through a provider's embeddings model (the real OpenAI client, a fake server)", () => {
  it("embeds facts and queries over /v1/embeddings and ranks them hybrid; a failing model leaves the search lexical, with a note", async () => {
    const server = await new FakeOpenAIServer(new OfflineChatModel({})).start();
    servers.push(server);
    const troupe = await engineWith({ TROUPE_EMBEDDINGS: "openai:text-embedding-3-small", OPENAI_API_KEY: "sk-fake", OPENAI_BASE_URL: server.baseUrl });
    try {
      await troupe.store.memories.save(alice, { text: "Alice's favourite colour is teal", subject: "alice's favourite colour" });
      await troupe.store.memories.save(alice, { text: "The office opens at nine", subject: "office hours" });
      const found = await troupe.store.memories.search(alice, "favorite color");
      expect(found.retrieval).toBe("hybrid");
      expect(found.items[0]?.text).toBe("Alice's favourite colour is teal");
      const calls = server.requestsFor("embeddings");
      expect(calls.length).toBe(3);
      expect(calls[0]?.body).toMatchObject({ model: "text-embedding-3-small" });

      server.inject({ kind: "status", status: 500, message: "embeddings are down" }, { role: "embeddings", times: 5 });
      const degraded = await troupe.store.memories.search(alice, "favourite colour");
      expect(degraded.retrieval).toBe("lexical");
      expect(degraded.note).toMatch(/the embeddings model openai:text-embedding-3-small failed .*the search was lexical/);
      expect(degraded.items[0]?.text).toBe("Alice's favourite colour is teal");
    } finally {
      troupe.close();
    }
  });

  it("refuses an embeddings setting it cannot use before anything opens", async () => {
    await expect(engineWith({ TROUPE_EMBEDDINGS: "openai" })).rejects.toMatchObject({ code: "invalid_config", message: expect.stringMatching(/TROUPE_EMBEDDINGS: name the embeddings model as provider:model/) });
    await expect(engineWith({ TROUPE_EMBEDDINGS: "anthropic:claude" })).rejects.toMatchObject({ code: "invalid_config", message: expect.stringMatching(/has no embeddings models/) });
    await expect(engineWith({ TROUPE_EMBEDDINGS: "openai:text-embedding-3-small" })).rejects.toMatchObject({ code: "missing_env", message: expect.stringMatching(/OPENAI_API_KEY/) });
    await expect(engineWith({ TROUPE_EMBEDDINGS: "nowhere:model" })).rejects.toMatchObject({ code: "unknown_provider" });
  });
});
