import { defineProvider } from "../provider.js";
import { OfflineChatModel } from "./offline-chat-model.js";

/** The embedded default: no key, no network, deterministic. */
export const offlineProvider = defineProvider({
  id: "offline",
  description: "rule-based model that runs without a key or network (arithmetic, workspace files, JSON)",
  defaultModel: "rules-v1",
  planWire: "compact",
  createModel: () => new OfflineChatModel({}),
});
