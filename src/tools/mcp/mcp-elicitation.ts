import { AsyncLocalStorage } from "node:async_hooks";
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { type ElicitationAnswer, type ElicitationQuestion, checkContent, fingerprintOf, formOf, MAX_MESSAGE, printable } from "../../core/elicitation.js";
import { truncate } from "../../core/text.js";
import type { ToolContext } from "../define-tool.js";
import type { ElicitationSettings } from "./mcp-config.js";

/**
 * A server's questions for a person (MCP elicitation, form mode), routed to the call they belong
 * to. A question cannot wait in the call for a person (who may answer tomorrow, to another
 * process): the call's run pauses instead, and the call is made again once they answered. So:
 *
 * - first pass: the server asks → troupe's run interrupts (kind `mcp-elicitation`); the call is
 *   cancelled and the server told `cancel` for this ask, so nothing waits on either side;
 * - after the answer: the same call is made again; when the server asks the same question (same
 *   message and form: its fingerprint), the person's answer is sent at once, with the form's
 *   defaults filled in; a different question pauses the run again for that one.
 *
 * The answers live in the run's checkpoint (LangGraph's resume values), so this holds across a
 * restart and on another process. A server may ask at most `maxPerCall` questions in one call,
 * answered ones included, so one that asks in a loop is stopped. Where no person can be asked (a
 * map's item, a direct call, `elicitation.mode: decline`) the server is told `decline`; every
 * question and its outcome is written in the call's audit reason.
 */

/** One call in flight on a connection: the questions its server asks during it come to it. */
export class CallSlot {
  readonly #controller = new AbortController();
  asked = 0;
  /** Set when the call must stop for its run to pause (a question a person has not answered yet). */
  paused = false;
  /** Why the call was stopped otherwise (a server asking in a loop). */
  stopped: string | undefined;

  constructor(
    readonly tool: string,
    readonly context: ToolContext,
  ) {}

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  stop(why?: string): void {
    if (why) this.stopped = why;
    else this.paused = true;
    this.#controller.abort(new Error(why ?? "paused for a person's answer"));
  }
}

export class ElicitationRouter {
  readonly #server: string;
  readonly #settings: ElicitationSettings;
  readonly #slots = new Set<CallSlot>();
  readonly #current = new AsyncLocalStorage<CallSlot>();
  readonly #warn: (message: string) => void;

  constructor(server: string, settings: ElicitationSettings, warn: (message: string) => void = () => {}) {
    this.#server = server;
    this.#settings = settings;
    this.#warn = warn;
  }

  /**
   * Runs a call with its slot. Over streamable HTTP the server's question arrives on the call's
   * own response stream, read in the call's async context: it finds its slot exactly, however
   * many calls are in flight. On stdio (one stream for all) it goes to the only call in flight.
   */
  async within<T>(slot: CallSlot, work: () => Promise<T>): Promise<T> {
    this.#slots.add(slot);
    try {
      return await this.#current.run(slot, work);
    } finally {
      this.#slots.delete(slot);
    }
  }

  #slotOf(): CallSlot | undefined {
    const current = this.#current.getStore();
    if (current && this.#slots.has(current)) return current;
    return this.#slots.size === 1 ? [...this.#slots][0] : undefined;
  }

  /** Answers one `elicitation/create` from the server. */
  async handle(params: ElicitRequest["params"]): Promise<ElicitResult> {
    const slot = this.#slotOf();
    const quoted = JSON.stringify(truncate(printable(params.message, 200), 120));
    if (!slot) {
      // Nothing to attribute it to (no call in flight, or several on one stdio stream): no person is asked for a call they do not own.
      const why = `the server asked ${quoted}, and troupe could not tell which of the ${this.#slots.size} calls in flight asked it (one stdio stream): declined`;
      for (const inFlight of this.#slots) inFlight.context.input?.note(why);
      this.#warn(`the MCP server "${this.#server}" asked a person ${quoted} outside a call troupe could tell (${this.#slots.size} in flight): declined`);
      return { action: "decline" };
    }
    const note = (text: string): void => slot.context.input?.note(`${this.#server} asked ${quoted}: ${text}`);
    slot.asked += 1;
    if (slot.asked > this.#settings.maxPerCall) {
      note(`stopped: more than ${this.#settings.maxPerCall} questions in one call`);
      slot.stop(`the MCP server "${this.#server}" asked more than ${this.#settings.maxPerCall} questions during one call to ${slot.tool}; the call was stopped`);
      return { action: "cancel" };
    }
    if (params.mode === "url") {
      note("declined: troupe answers form questions only");
      return { action: "decline" };
    }
    const built = formOf(params.requestedSchema);
    if ("refused" in built) {
      note(`declined without asking: ${built.refused}`);
      return { action: "decline" };
    }
    const channel = slot.context.input;
    if (this.#settings.mode === "decline" || !channel?.canAsk) {
      note(this.#settings.mode === "decline" ? "declined: elicitation.mode is decline for this server" : "declined: no person can be asked in this call (a direct call or a map's item)");
      return { action: "decline" };
    }
    const question: ElicitationQuestion = {
      server: this.#server,
      tool: slot.tool,
      ...(slot.context.agent !== undefined ? { agent: slot.context.agent } : {}),
      ...(slot.context.subtaskId !== undefined ? { subtaskId: slot.context.subtaskId } : {}),
      message: printable(params.message, MAX_MESSAGE),
      requestedSchema: built.form,
      fingerprint: fingerprintOf(this.#server, slot.tool, params.message, built.form),
      source: `mcp:${this.#server}`,
      untrusted: true,
      askedAt: Date.now(),
      ...(this.#settings.timeoutMs > 0 ? { expiresAt: Date.now() + this.#settings.timeoutMs } : {}),
    };
    // An answer given to an earlier question (the server asks something else now) is not this one's: ask again, within the call's limit.
    for (let tries = 0; tries < 2; tries += 1) {
      const asked = await channel.ask(question);
      if ("paused" in asked) {
        note("waiting for a person's answer");
        slot.stop();
        return { action: "cancel" };
      }
      const answer: ElicitationAnswer = asked.answer;
      if (answer.fingerprint !== question.fingerprint) continue;
      if (answer.action !== "accept") {
        note(`the person's answer: ${answer.action}`);
        return { action: answer.action };
      }
      const checked = checkContent(question.requestedSchema, answer.content ?? {});
      if ("violations" in checked) {
        note(`declined: the answer kept does not fit the form (${checked.violations.join("; ")})`);
        return { action: "decline" };
      }
      note("the person's answer: accept");
      return { action: "accept", content: checked.content };
    }
    note("declined: the answers kept were given to other questions");
    return { action: "decline" };
  }
}
