import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FakeOpenAIServer } from "../testing/fake-openai-server.js";
import { createChatOpenAI } from "./openai-client.js";

/** A brain for the fake server that answers every request with one call of file_write. */
class WritesAFile extends BaseChatModel {
  override _llmType(): string {
    return "writes-a-file";
  }

  override async _generate(): Promise<ChatResult> {
    const message = new AIMessage({ content: "", tool_calls: [{ id: "call_1", name: "file_write", args: { path: "notes.txt", content: "a line long enough to be cut in half" }, type: "tool_call" }] });
    return { generations: [{ text: "", message }] };
  }
}

const servers: FakeOpenAIServer[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe("the OpenAI client troupe makes", () => {
  it("keeps a tool call cut off at the output limit as an invalid call, with no LangChain deprecation notice on the console", async () => {
    const server = await new FakeOpenAIServer(new WritesAFile({})).start();
    servers.push(server);
    // The answer is cut at the limit in the middle of the call's arguments (finish_reason "length").
    server.inject({ kind: "misbehave", as: "truncated" });
    const warnings: string[] = [];
    vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => void warnings.push(args.map(String).join(" ")));
    const model = createChatOpenAI({ apiKey: "sk-fake", model: "gpt-4.1-mini", configuration: { baseURL: server.baseUrl }, maxRetries: 0 });
    const reply = await model.invoke("write the notes");
    expect(reply.tool_calls).toEqual([]);
    expect(reply.invalid_tool_calls).toHaveLength(1);
    expect(reply.invalid_tool_calls?.[0]).toMatchObject({ name: "file_write", type: "invalid_tool_call" });
    expect(reply.invalid_tool_calls?.[0]?.error).toMatch(/not valid JSON/);
    expect(warnings).toEqual([]);
  });

  it("reads whole tool calls as before", async () => {
    const server = await new FakeOpenAIServer(new WritesAFile({})).start();
    servers.push(server);
    const model = createChatOpenAI({ apiKey: "sk-fake", model: "gpt-4.1-mini", configuration: { baseURL: server.baseUrl }, maxRetries: 0 });
    const reply = await model.invoke("write the notes");
    expect(reply.tool_calls?.map(({ name, args }) => ({ name, args }))).toEqual([{ name: "file_write", args: { path: "notes.txt", content: "a line long enough to be cut in half" } }]);
    expect(reply.invalid_tool_calls ?? []).toEqual([]);
  });
});
