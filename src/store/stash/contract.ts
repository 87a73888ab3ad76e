import { z } from "zod";
import { type MapItemRecord, type Stash, storedLabel } from "../../core/stash.js";

/** A stored map item (either database), validated on the way out. */
export const ItemRow = z
  .object({
    item_index: z.number().int(),
    fingerprint: z.string(),
    round: z.number().int(),
    status: z.enum(["success", "error"]),
    input: z.string(),
    output: z.string().nullable(),
    error: z.string().nullable(),
    duration_ms: z.coerce.number(),
    label: z.string().nullable().default(null),
  })
  .transform((row): MapItemRecord => {
    const record: MapItemRecord = {
      index: row.item_index,
      fingerprint: row.fingerprint,
      round: row.round,
      status: row.status,
      input: JSON.parse(row.input) as unknown,
      durationMs: row.duration_ms,
      label: storedLabel(row.label),
    };
    if (row.output !== null) record.output = JSON.parse(row.output) as unknown;
    if (row.error !== null) record.error = row.error;
    return record;
  });

/** The data stash as the store keeps it: the graph's `Stash`, and a flush of the writes waiting. */
export interface StashStore extends Stash {
  /** Commits the items waiting to be written, and tells their writers. */
  flush(): Promise<void>;
  /**
   * Copies subtasks' results (and their map items) from one run to another — a fork keeps the
   * results it does not run again under its own run, so the first run can be deleted. Returns
   * how many results were copied.
   */
  copyResults(fromRunId: string, toRunId: string, subtaskIds: readonly string[]): Promise<number>;
}

