/**
 * troupe's one placeholder style: `@name`. SQL written once for both dialects (filters, the run
 * update) names its values; SQLite binds `@name` itself, and on Postgres `positional` turns the
 * names into `$1…$n` with the values in that order. SQL written for Postgres alone uses `$n`.
 */
export function positional(sql: string, values: Record<string, unknown>): { text: string; values: unknown[] } {
  const order: string[] = [];
  const text = sql.replace(/@(\w+)/g, (_match, name: string) => {
    let index = order.indexOf(name);
    if (index < 0) {
      order.push(name);
      index = order.length - 1;
    }
    return `$${index + 1}`;
  });
  return { text, values: order.map((name) => values[name]) };
}
