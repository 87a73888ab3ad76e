import { describe, expect, it } from "vitest";
import { type BoardMessage, isAddressedTo, mergeBoard, messagesFor } from "./board.js";
import { LIMITS } from "./limits.js";

const message = (id: string, from: string, audience: BoardMessage["audience"]): BoardMessage => ({ id, from, agent: "research", audience, text: `text of ${id}`, at: 1, round: 0 });

describe("the board's messages", () => {
  const everyone = message("s1.1.1", "s1", { kind: "everyone" });
  const toS2 = message("s1.1.2", "s1", { kind: "subtask", id: "s2" });
  const toCode = message("s1.1.3", "s1", { kind: "agent", name: "code" });
  const onPrices = message("s1.1.4", "s1", { kind: "topic", name: "prices" });
  const mine = message("s2.1.1", "s2", { kind: "everyone" });

  it("reach everyone, one subtask, an agent's subtasks, or a topic's readers — never back to their poster", () => {
    const reader = { subtaskId: "s2", agent: "execute" };
    expect([everyone, toS2, toCode, onPrices, mine].filter((item) => isAddressedTo(item, reader)).map((item) => item.id)).toEqual(["s1.1.1", "s1.1.2"]);
    expect(isAddressedTo(toCode, { subtaskId: "s3", agent: "code" })).toBe(true);
    expect(isAddressedTo(onPrices, { ...reader, topics: ["prices"] })).toBe(true);
  });

  it("are read after a given message and at most so many at a time, newest kept", () => {
    const all = [everyone, toS2, message("s1.1.5", "s1", { kind: "everyone" })];
    expect(messagesFor(all, { subtaskId: "s2", agent: "execute" }, { after: "s1.1.1" }).map((item) => item.id)).toEqual(["s1.1.2", "s1.1.5"]);
    expect(messagesFor(all, { subtaskId: "s2", agent: "execute" }, { max: 1 }).map((item) => item.id)).toEqual(["s1.1.5"]);
  });

  it("merge once each by id (a replay hands the same posts back) and stay bounded", () => {
    expect(mergeBoard([everyone], [everyone, toS2]).map((item) => item.id)).toEqual(["s1.1.1", "s1.1.2"]);
    const many = Array.from({ length: LIMITS.boardMaxMessages + 5 }, (_, index) => message(`m${index}`, "s1", { kind: "everyone" }));
    const merged = mergeBoard([], many);
    expect(merged).toHaveLength(LIMITS.boardMaxMessages);
    expect(merged[0]?.id).toBe("m5");
  });
});
