import type { BoardMessage } from "../core/board.js";
import type { Designation } from "../core/designation.js";
import { type CallProvenance, isUntrusted, joinLabels, type Label, sourceOf, TRUSTED, untrustedLabel } from "../core/provenance.js";
import { HANDLE_KEY } from "../core/prompt-protocol.js";
import { UNLABELLED } from "../core/stash.js";
import type { ToolOutcome } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import { isValueHandle } from "./prompt-budget.js";

/** What a worker knows of where its inputs came from, for the trust policy (docs/trust.md). */
export interface WorkerTrust {
  /** Each argument's label (absent: trusted, a plan literal). */
  args: Readonly<Record<string, Label>>;
  /** The label of its feedback (the critic's notes, untrusted when it had read untrusted results). */
  feedback?: Label;
  /** What the trusted instructions name for this subtask. */
  designation: Designation;
  /** Called before a call that will wait for a person because untrusted data steered it: the graph makes the worker's steps durable first. */
  beforeSteeredCall?: () => Promise<void>;
}

/** Scans at most this much of a value read on the web for links a worker may follow. */
const LINK_SCAN_CHARS = 1_000_000;
const MAX_LINKS = 2_000;

/** The URLs written in a value read from the web (following one verbatim sends nothing out). */
function collectLinks(value: unknown, into: Set<string>): void {
  const text = (typeof value === "string" ? value : (JSON.stringify(value) ?? "")).slice(0, LINK_SCAN_CHARS);
  for (const match of text.matchAll(/https?:\/\/[^\s"'<>\\`{}|^]+/g)) {
    if (into.size >= MAX_LINKS) return;
    // A sentence's final punctuation is not part of the link.
    into.add(match[0].replace(/[.,;:!?)\]]+$/, ""));
  }
}

/**
 * The provenance of one worker's conversation: everything its model has read (its prompt, then
 * every tool output), the label behind each handle it may pass back, and the links it read on the
 * web. Each call it makes gets a `CallProvenance` from it; its result carries what it read.
 */
export class WorkerProvenance {
  readonly #trust: WorkerTrust;
  readonly #tools: ToolRegistry;
  readonly #writer: string;
  readonly #handles: Map<string, Label>;
  readonly #links = new Set<string>();
  #read: Label;

  constructor(trust: WorkerTrust, tools: ToolRegistry, shown: { args: readonly string[]; dependencies: ReadonlyArray<{ provenance?: Label }>; feedback: boolean; board: readonly BoardMessage[] }, writer: string) {
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

  get trust(): WorkerTrust {
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
    if (outcome.ok && this.#tools.readsPublicWeb(tool, args, outcome.value)) collectLinks(outcome.value, this.#links);
    return label;
  }

  /** The label of what the model writes now: what it read — marked as its own words once that was untrusted. */
  result(): Label {
    return this.tainted ? joinLabels(this.#read, untrustedLabel([sourceOf("model", this.#writer)])) : this.#read;
  }
}
