import { defineProvider } from "../provider.js";
import { OfflineChatModel } from "./offline-chat-model.js";

/** The embedded default: no key, no network, deterministic. */
export const offlineProvider = defineProvider({
  id: "offline",
  description: "rule-based model that runs without a key or network (arithmetic, workspace files, JSON)",
  defaultModel: "rules-v1",
  planWire: "compact",
  // Its answers are written by rules, as plain text, and it writes no JSON against a schema.
  answerFormat: "text",
  typedAnswers: false,
  createModel: () => new OfflineChatModel({}),
});
