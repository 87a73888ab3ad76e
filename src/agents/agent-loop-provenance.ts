import type { BoardMessage } from "../core/board.js";
import type { Designation } from "../core/designation.js";
import { type CallProvenance, isUntrusted, joinLabels, type Label, sourceOf, TRUSTED, untrustedLabel } from "../core/provenance.js";
import { HANDLE_KEY } from "../core/prompt-protocol.js";
import { UNLABELLED } from "../core/stash.js";
import type { ToolOutcome } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import { isValueHandle } from "./prompt-budget.js";

/** What a worker knows of where its inputs came from, for the trust policy (docs/trust.md). */
export interface AgentLoopTrust {
  /** Each argument's label (absent: trusted, a plan literal). */
  args: Readonly<Record<string, Label>>;
  /** The label of its feedback (the critic's notes, untrusted when it had read untrusted results). */
  feedback?: Label;
  /** What the trusted instructions name for this subtask. */
  designation: Designation;
  /** Called before a call that will wait for a person because untrusted data steered it: the graph makes the worker's steps durable first. */
  beforeSteeredCall?: () => Promise<void>;
}

/** How much of each value read on the web is searched for a link, and how many values are kept. */
const LINK_SCAN_CHARS = 1_000_000;
const MAX_PAGES = 50;
const URL_CHAR = /[\p{L}\p{N}_\-./~?=&%#+:@!$,;*'()[\]]/u;

/**
 * The pages a worker read on the web, asked whether a URL appeared in one verbatim (following it
 * sends nothing out). Searched only when a call asks — rarely — rather than scanned for every
 * link as each page arrives.
 */
class WebLinks {
  readonly #pages: unknown[] = [];
  readonly #texts = new Map<unknown, string>();

  add(value: unknown): void {
    if (this.#pages.length < MAX_PAGES) this.#pages.push(value);
  }

  has(url: string): boolean {
    if (!/^https?:\/\//.test(url)) return false;
    return this.#pages.some((page) => {
      let text = this.#texts.get(page);
      if (text === undefined) {
        text = (typeof page === "string" ? page : (JSON.stringify(page) ?? "")).slice(0, LINK_SCAN_CHARS);
        this.#texts.set(page, text);
      }
      // The URL whole, not the start of a longer one.
      for (let from = text.indexOf(url); from >= 0; from = text.indexOf(url, from + 1)) {
        const after = text[from + url.length];
        if (after === undefined || !URL_CHAR.test(after) || ".,;:!?)]".includes(after)) return true;
      }
      return false;
    });
  }
}

/**
 * The provenance of one worker's conversation: everything its model has read (its prompt, then
 * every tool output), the label behind each handle it may pass back, and the links it read on the
 * web. Each call it makes gets a `CallProvenance` from it; its result carries what it read.
 */
export class AgentLoopProvenance {
  readonly #trust: AgentLoopTrust;
  readonly #tools: ToolRegistry;
  readonly #writer: string;
  readonly #handles: Map<string, Label>;
  readonly #links = new WebLinks();
  #read: Label;

  constructor(trust: AgentLoopTrust, tools: ToolRegistry, shown: { args: readonly string[]; dependencies: ReadonlyArray<{ provenance?: Label }>; feedback: boolean; board: readonly BoardMessage[] }, writer: string) {
    this.#trust = trust;
    this.#tools = tools;
    this.#writer = writer;
    this.#handles = new Map(shown.args.map((name) => [`args.${name}`, this.argument(name)]));
    this.#read = joinLabels(
      ...shown.args.map((name) => this.argument(name)),
      ...shown.dependencies.map((dependency) => dependency.provenance),
      shown.feedback ? trust.feedback : undefined,
      ...shown.board.map((message) => message.label),
    );
  }

  get trust(): AgentLoopTrust {
    return this.#trust;
  }

  /** Whether the model has read anything untrusted. */
  get tainted(): boolean {
    return isUntrusted(this.#read);
  }

  argument(name: string): Label {
    return this.#trust.args[name] ?? TRUSTED;
  }

  /** How a call's arguments came: the handles it passed (with their labels), and what the model had read when it chose it. */
  callProvenance(args: Record<string, unknown>): CallProvenance {
    const references: Record<string, Label> = {};
    for (const [key, value] of Object.entries(args)) if (isValueHandle(value)) references[key] = this.#handles.get(value[HANDLE_KEY]) ?? UNLABELLED;
    return { context: this.#read, references, designation: this.#trust.designation, links: this.#links };
  }

  /** Takes in a call's outcome as the model reads it, under its handle; returns the outcome's label. An outcome without one (kept before labels) is untrusted. */
  note(handle: string, tool: string, args: unknown, outcome: ToolOutcome): Label {
    const label = outcome.label ?? (this.#tools.trust ? UNLABELLED : TRUSTED);
    this.#read = joinLabels(this.#read, label);
    this.#handles.set(handle, label);
    // Links only from what the web itself returned (a page, search results), never from what a model composed.
    if (outcome.ok && this.#tools.readsPublicWeb(tool, args, outcome.value)) this.#links.add(outcome.value);
    return label;
  }

  /** The label of what the model writes now: what it read — marked as its own words once that was untrusted. */
  result(): Label {
    return this.tainted ? joinLabels(this.#read, untrustedLabel([sourceOf("model", this.#writer)])) : this.#read;
  }
}
