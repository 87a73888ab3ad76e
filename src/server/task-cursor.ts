import { z } from "zod";
import { InputError } from "../core/errors.js";
import type { RunCursor } from "../store/runs/contract.js";

const CursorParts = z.tuple([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)]);

/** A page's cursor as the API hands it out: the last task's place in the listing, opaque to clients (base64url of JSON). */
export function taskCursor(cursor: RunCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt, cursor.order])).toString("base64url");
}

/** A cursor a client sent back; anything else is cursor_invalid. */
export function parseTaskCursor(text: string): RunCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  const checked = CursorParts.safeParse(parsed);
  if (!checked.success || taskCursor({ createdAt: checked.data[0], order: checked.data[1] }) !== text) {
    throw new InputError("cursor_invalid", "cursor is not a next_cursor of this listing: send one from an earlier page, unchanged");
  }
  return { createdAt: checked.data[0], order: checked.data[1] };
}
