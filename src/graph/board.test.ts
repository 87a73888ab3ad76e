import { describe, expect, it } from "vitest";
import type { BoardMessage } from "../core/board.js";
import { LIMITS } from "../core/limits.js";
import { LiveBoard } from "./board.js";

function seat(board: LiveBoard, subtaskId: string, agent: string, posted: BoardMessage[] = []) {
  return board.access({ subtaskId, agent, attempt: 1, round: 0, subtasks: () => ["s1", "s2", "s3"], agents: ["research", "execute"], onPost: (message) => posted.push(message) });
}

describe("the live board of a node's subtasks", () => {
  it("shows each subtask what others post at once, by audience, and follows the topics it read", () => {
    const board = new LiveBoard([]);
    const posted: BoardMessage[] = [];
    const s1 = seat(board, "s1", "research", posted);
    const s2 = seat(board, "s2", "execute");
    s1.post({ text: "hello all" });
    s1.post({ to: "execute", text: "for executors" });
    s1.post({ topic: "prices", text: "up 3%" });
    expect(posted.map((message) => message.id)).toEqual(["s1.1.1", "s1.1.2", "s1.1.3"]);
    expect(s2.read({}).messages.map((message) => message.text)).toEqual(["hello all", "for executors"]);
    expect(s2.read({ topics: ["prices"] }).messages.map((message) => message.text)).toEqual(["hello all", "for executors", "up 3%"]);
    // A topic read once is followed.
    expect(s2.read({ after: "s1.1.2" }).messages.map((message) => message.text)).toEqual(["up 3%"]);
    expect(seat(board, "s1", "research").read({}).messages).toEqual([]);
  });

  it("refuses an unknown recipient, both a recipient and a topic, more posts than a subtask may make, and a full board", () => {
    const board = new LiveBoard([]);
    const s1 = seat(board, "s1", "research");
    expect(() => s1.post({ to: "s9", text: "x" })).toThrow(/"s9" is neither a subtask of this plan \(s1, s2, s3\) nor an agent \(research, execute\)/);
    expect(() => s1.post({ to: "s2", topic: "t", text: "x" })).toThrow("give either to (a subtask or an agent) or topic, not both");
    for (let index = 0; index < LIMITS.boardPostsPerSubtask; index += 1) s1.post({ text: `m${index}` });
    expect(() => s1.post({ text: "one more" })).toThrow(`a subtask posts at most ${LIMITS.boardPostsPerSubtask} messages`);
    const full = new LiveBoard(Array.from({ length: LIMITS.boardMaxMessages }, (_, index) => ({ id: `old.${index}`, from: "s0", agent: "research", audience: { kind: "everyone" as const }, text: "x", at: 0, round: 0 })));
    expect(() => seat(full, "s1", "research").post({ text: "late" })).toThrow(`the board holds its ${LIMITS.boardMaxMessages} messages`);
  });

  it("shows at most a page of messages per read, and says how many earlier ones were left out", () => {
    const board = new LiveBoard([]);
    const writers = [seat(board, "s1", "research"), seat(board, "s3", "research")];
    for (let index = 0; index < LIMITS.boardReadMax + 3; index += 1) writers[index % 2]?.post({ text: `m${index}` });
    const read = seat(board, "s2", "execute").read({});
    expect(read.messages).toHaveLength(LIMITS.boardReadMax);
    expect(read.more).toBe(3);
  });
});
