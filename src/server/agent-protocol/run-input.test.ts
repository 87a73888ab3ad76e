import { describe, expect, it } from "vitest";
import type { PendingInterrupt } from "../../runtime/engine.js";
import { executeBodyOf, resumeBodyFor, taskOf } from "./run-input.js";
import { RunCreate } from "./wire.js";

const waiting = (kind: PendingInterrupt["kind"], id = "i1"): PendingInterrupt[] => [{ id, kind, payload: {} }];

describe("a Command's resume as troupe's resume body", () => {
  it("answers an approval: true/false, words, troupe's own body, LangChain's decisions and Agent Inbox's", () => {
    const plan = waiting("plan-approval");
    expect(resumeBodyFor(true, plan, "plan-approval")).toEqual({ decision: "approve" });
    expect(resumeBodyFor(false, plan, "plan-approval")).toEqual({ decision: "reject" });
    expect(resumeBodyFor("yes", plan, "plan-approval")).toEqual({ decision: "approve" });
    expect(resumeBodyFor("reject: only the arithmetic", plan, "plan-approval")).toEqual({ decision: "reject", feedback: "only the arithmetic" });
    expect(resumeBodyFor({ decision: "reject", feedback: "shorter" }, plan, "plan-approval")).toEqual({ decision: "reject", feedback: "shorter" });
    expect(resumeBodyFor({ decisions: [{ type: "approve" }] }, plan, "plan-approval")).toEqual({ decision: "approve" });
    expect(resumeBodyFor({ decisions: [{ type: "reject", message: "no files" }] }, plan, "plan-approval")).toEqual({ decision: "reject", feedback: "no files" });
    const edited = [{ id: "s1", label: "Compute 2^10", agent: "execute", dependsOn: [], args: { expression: { value: "2^10" } }, tool: "calculator" }];
    expect(resumeBodyFor({ decisions: [{ type: "edit", edited_action: { name: "approve_plan", args: { plan: edited } } }] }, plan, "plan-approval")).toMatchObject({ decision: "edit", plan: [{ id: "s1" }] });
    expect(resumeBodyFor([{ type: "accept" }], plan, "plan-approval")).toEqual({ decision: "approve" });
    expect(resumeBodyFor([{ type: "ignore" }], plan, "plan-approval")).toEqual({ decision: "reject" });
    const answer = waiting("answer-approval");
    expect(resumeBodyFor({ decisions: [{ type: "edit", edited_action: { name: "approve_answer", args: { answer: "Five." } } }] }, answer, "answer-approval")).toEqual({ decision: "edit", answer: "Five." });
  });

  it("answers a question with its words, an answer field, an edit of the request or Agent Inbox's response", () => {
    const question = waiting("question");
    expect(resumeBodyFor("Paris", question, "question")).toEqual({ decision: "answer", answer: "Paris" });
    expect(resumeBodyFor({ answer: "Paris" }, question, "question")).toEqual({ decision: "answer", answer: "Paris" });
    expect(resumeBodyFor({ decisions: [{ type: "edit", edited_action: { name: "answer_question", args: { answer: "Paris" } } }] }, question, "question")).toEqual({ decision: "answer", answer: "Paris" });
    expect(resumeBodyFor([{ type: "response", args: "Paris" }], question, "question")).toEqual({ decision: "answer", answer: "Paris" });
    expect(resumeBodyFor("no", question, "question")).toEqual({ decision: "reject" });
  });

  it("names the interrupt a map of interrupt ids answers, one at a time", () => {
    const two: PendingInterrupt[] = [
      { id: "a", kind: "tool-approval", payload: {} },
      { id: "b", kind: "tool-approval", payload: {} },
    ];
    expect(resumeBodyFor({ b: "approve" }, two, "tool-approval")).toEqual({ decision: "approve", interrupt_id: "b" });
    expect(() => resumeBodyFor({ a: "approve", b: "approve" }, two, "tool-approval")).toThrow(expect.objectContaining({ code: "command_invalid" }));
  });

  it("refuses what does not answer the wait, by name", () => {
    expect(() => resumeBodyFor(undefined, waiting("plan-approval"), "plan-approval")).toThrow(expect.objectContaining({ code: "command_invalid" }));
    expect(() => resumeBodyFor("maybe later", waiting("plan-approval"), "plan-approval")).toThrow(expect.objectContaining({ code: "decision_invalid" }));
    expect(() => resumeBodyFor({ decisions: [{ type: "edit", args: {} }] }, waiting("tool-approval"), "tool-approval")).toThrow(expect.objectContaining({ code: "decision_invalid" }));
    expect(() => resumeBodyFor({ decisions: [] }, waiting("plan-approval"), "plan-approval")).toThrow(expect.objectContaining({ code: "decision_invalid" }));
    expect(() => resumeBodyFor({ decision: "approve", extra: 1 }, waiting("plan-approval"), "plan-approval")).toThrow(expect.objectContaining({ code: "unknown_field" }));
    expect(() => resumeBodyFor(3.5, waiting("question"), "question")).toThrow(expect.objectContaining({ code: "decision_invalid" }));
    expect(() => resumeBodyFor({ answer: "yes please" }, waiting("plan-approval"), "plan-approval")).toThrow(expect.objectContaining({ code: "decision_invalid" }));
    expect(resumeBodyFor({ decision: "edit", answer: "Paris" }, waiting("question"), "question")).toEqual({ decision: "answer", answer: "Paris" });
  });
});

describe("a run's input as troupe's task", () => {
  it("takes input.task, or the text of the last human message (content blocks joined)", () => {
    expect(taskOf({ task: "compute 2+3" })).toBe("compute 2+3");
    expect(taskOf({ messages: "compute 2+3" })).toBe("compute 2+3");
    expect(taskOf({ messages: [{ type: "human", content: "first" }, { type: "ai", content: "reply" }, { role: "user", content: [{ type: "text", text: "second" }, { type: "text", text: "line" }] }] })).toBe("second\nline");
    expect(() => taskOf({ messages: [{ type: "human", content: [{ type: "image_url", image_url: "x" }] }] })).toThrow(expect.objectContaining({ code: "agent_protocol_unsupported" }));
    expect(() => taskOf({ task: "a", messages: "b" })).toThrow(expect.objectContaining({ code: "agent_protocol_unsupported" }));
    expect(() => taskOf({ messages: [] })).toThrow(expect.objectContaining({ code: "agent_protocol_unsupported" }));
  });

  it("reads troupe's settings from context, over config.configurable's keys troupe knows; the strategy is the run's on_busy (reject by default)", () => {
    const body = RunCreate.parse({ assistant_id: "troupe", input: { task: "compute 2+3", context: { team: "a" } }, config: { configurable: { approve_plan: true, user_id: "u1" } }, context: { max_iterations: 2 }, webhook: "https://hooks.example/x" });
    expect(executeBodyOf(body, body.input as never, "t1")).toEqual({ task: "compute 2+3", approve_plan: true, max_iterations: 2, context: { team: "a" }, on_busy: "reject", thread_id: "t1", webhook: { url: "https://hooks.example/x" } });
    const enqueue = RunCreate.parse({ assistant_id: "troupe", input: { task: "x" }, multitask_strategy: "enqueue" });
    expect(executeBodyOf(enqueue, enqueue.input as never, undefined).on_busy).toBe("enqueue");
    const unknown = RunCreate.parse({ assistant_id: "troupe", input: { task: "x" }, context: { temperature: 1 } });
    expect(() => executeBodyOf(unknown, unknown.input as never, undefined)).toThrow(expect.objectContaining({ code: "unknown_field" }));
    const tooLong = RunCreate.parse({ assistant_id: "troupe", input: { task: "x".repeat(5_001) } });
    expect(() => executeBodyOf(tooLong, tooLong.input as never, undefined)).toThrow(expect.objectContaining({ code: "task_too_long" }));
  });
});
