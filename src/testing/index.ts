export { type ScriptedCall, ScriptedChatModel, type ScriptedChatModelOptions, type ScriptStep } from "./scripted-chat-model.js";
export { answerStep, finalStep, planStep, questionStep, reviewStep, subtask, toolStep } from "./script.js";
export { readScript, scriptedProvider } from "./scripted-provider.js";
export { modelSetOf } from "./model-set.js";
export { FakeOpenAIServer } from "./fake-openai-server.js";
export { FakeAnthropicServer } from "./fake-anthropic-server.js";
export { type Fault, type FakeRequest, FakeProviderServer } from "./fake-server.js";
export { SchemaFollowingChatModel, type SchemaFollowingCall, valueFromSchema } from "./schema-following-chat-model.js";
export { HashingEmbeddings } from "./hashing-embeddings.js";
