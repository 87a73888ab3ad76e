import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, McpError, SubscribeRequestSchema, UnsubscribeRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { isTroupeError } from "../../core/errors.js";
import type { Principal } from "../config.js";
import type { RunFeed } from "../run-follow.js";
import { anyParams, paramsOf } from "./mcp-params.js";
import { resourceNotFound, runIdOfUri } from "./resource-uris.js";

/** Resources one session may follow at once. */
export const MAX_SUBSCRIPTIONS = 100;
/** A run's events closer together than this make one notification (the last one always goes). */
const COALESCE_MS = 200;

interface Followed {
  uris: Set<string>;
  unhook: () => void;
  timer: NodeJS.Timeout | undefined;
  dirty: boolean;
}

/**
 * `resources/subscribe` and `resources/unsubscribe` for one session: a run's resources
 * (`troupe://runs/{id}` and its graph) of the session's own key send
 * `notifications/resources/updated` as the run goes — on each of its events, wherever it runs
 * (this process's live events; another process's through the store's notifications on Postgres),
 * at most one per 200 ms per run with the last change always told. Anything else, and another
 * key's run, is "resource not found" (-32002) alike. At most 100 per session; unsubscribing what
 * is not followed is fine. Everything is let go when the session closes.
 */
export class RunSubscriptions {
  readonly #feed: RunFeed;
  readonly #principal: Principal;
  readonly #notify: (uri: string) => Promise<void>;
  readonly #runs = new Map<string, Followed>();
  #count = 0;
  #unfollowStore: (() => void) | undefined;
  #closed = false;

  constructor(feed: RunFeed, principal: Principal, notify: (uri: string) => Promise<void>) {
    this.#feed = feed;
    this.#principal = principal;
    this.#notify = notify;
  }

  get size(): number {
    return this.#count;
  }

  register(server: McpServer): void {
    server.server.setRequestHandler(anyParams("resources/subscribe"), async (request) => {
      await this.subscribe(paramsOf(SubscribeRequestSchema.shape.params, request.params, "resources/subscribe").uri);
      return {};
    });
    server.server.setRequestHandler(anyParams("resources/unsubscribe"), async (request) => {
      this.unsubscribe(paramsOf(UnsubscribeRequestSchema.shape.params, request.params, "resources/unsubscribe").uri);
      return {};
    });
  }

  async subscribe(uri: string): Promise<void> {
    const runId = runIdOfUri(uri);
    if (runId === undefined) throw resourceNotFound(uri, "troupe sends updates for its runs' resources: troupe://runs/{id} and troupe://runs/{id}/graph");
    if (this.#runs.get(runId)?.uris.has(uri)) return;
    if (this.#count >= MAX_SUBSCRIPTIONS) throw new McpError(ErrorCode.InvalidRequest, `this session follows ${MAX_SUBSCRIPTIONS} resources already, the most it may: unsubscribe from one first`);
    try {
      await this.#feed.tasks.record(this.#principal, runId);
    } catch (error) {
      if (isTroupeError(error) && error.code === "task_not_found") throw resourceNotFound(uri, `no run with id ${runId.slice(0, 200)}`);
      throw error;
    }
    // Checked again: the session may have closed, or another subscribe got there, while the record was read.
    if (this.#closed) throw new McpError(ErrorCode.ConnectionClosed, "the session is closed");
    if (this.#runs.get(runId)?.uris.has(uri)) return;
    if (this.#count >= MAX_SUBSCRIPTIONS) throw new McpError(ErrorCode.InvalidRequest, `this session follows ${MAX_SUBSCRIPTIONS} resources already, the most it may: unsubscribe from one first`);
    let followed = this.#runs.get(runId);
    if (!followed) {
      followed = { uris: new Set(), unhook: this.#feed.hub.subscribe(runId, () => this.#changed(runId)), timer: undefined, dirty: false };
      this.#runs.set(runId, followed);
    }
    followed.uris.add(uri);
    this.#count += 1;
    // Runs driven by another process (Postgres) are heard of through the store: one listener for the session.
    this.#unfollowStore ??= this.#feed.tasks.troupe.store.events.follow?.((stream) => {
      if (stream === "") for (const id of this.#runs.keys()) this.#changed(id);
      else if (this.#runs.has(stream)) this.#changed(stream);
    });
  }

  unsubscribe(uri: string): void {
    const runId = runIdOfUri(uri);
    const followed = runId === undefined ? undefined : this.#runs.get(runId);
    if (!followed || !followed.uris.delete(uri)) return;
    this.#count -= 1;
    if (followed.uris.size === 0) this.#drop(runId as string, followed);
  }

  close(): void {
    this.#closed = true;
    for (const [runId, followed] of this.#runs) this.#drop(runId, followed);
    this.#count = 0;
  }

  #drop(runId: string, followed: Followed): void {
    followed.unhook();
    clearTimeout(followed.timer);
    this.#runs.delete(runId);
    if (this.#runs.size === 0) {
      this.#unfollowStore?.();
      this.#unfollowStore = undefined;
    }
  }

  /** A change of the run: its resources are told now, or once the current 200 ms are over. */
  #changed(runId: string): void {
    const followed = this.#runs.get(runId);
    if (!followed) return;
    if (followed.timer) {
      followed.dirty = true;
      return;
    }
    for (const uri of followed.uris) void this.#notify(uri).catch(() => undefined);
    followed.timer = setTimeout(() => {
      followed.timer = undefined;
      if (!followed.dirty) return;
      followed.dirty = false;
      this.#changed(runId);
    }, COALESCE_MS);
    followed.timer.unref();
  }
}
