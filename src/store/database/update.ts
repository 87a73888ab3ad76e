/** What an UPDATE of one row by id is built from. */
export interface RowUpdate<Patch extends object> {
  table: string;
  /** Each patch field's column. */
  columns: Record<keyof Patch, string>;
  id: string;
  patch: Patch;
  now: number;
  /** Change the row only while its status is one of these (none: never). */
  ifStatus?: readonly string[];
  /** Further assignments the change brings (`starts = starts + 1`). */
  also?: readonly string[];
  /** The value stored for a field (JSON as text, flags as 0/1); the value itself by default. */
  encode?: (key: keyof Patch, value: unknown) => unknown;
}

/**
 * An UPDATE of one row by id for both dialects, in the one placeholder style (`@name`, see
 * placeholders.ts): the patch's columns, `updated_at`, and a guard on the row's status.
 */
export function rowUpdate<Patch extends object>(update: RowUpdate<Patch>): { sql: string; values: Record<string, unknown> } {
  const sets = ["updated_at = @updatedAt", ...(update.also ?? [])];
  const values: Record<string, unknown> = { id: update.id, updatedAt: update.now };
  for (const [key, value] of Object.entries(update.patch) as Array<[keyof Patch & string, unknown]>) {
    if (value === undefined) continue;
    sets.push(`${update.columns[key]} = @${key}`);
    values[key] = update.encode ? update.encode(key, value) : value;
  }
  let guard = "";
  if (update.ifStatus?.length === 0) guard = " AND 1 = 0";
  else if (update.ifStatus) {
    guard = ` AND status IN (${update.ifStatus.map((_status, index) => `@ifStatus${index}`).join(", ")})`;
    update.ifStatus.forEach((status, index) => (values[`ifStatus${index}`] = status));
  }
  return { sql: `UPDATE ${update.table} SET ${sets.join(", ")} WHERE id = @id${guard}`, values };
}
