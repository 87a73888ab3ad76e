/**
 * The size of a value as JSON, in UTF-8 bytes, counted without building the JSON text and
 * stopping as soon as it passes `limit` (so a huge value costs no more than the walk up to the
 * limit). Strings count their UTF-8 bytes plus quotes; escapes are not counted, so the figure is
 * a lower bound that is exact for ordinary text.
 */
export function jsonSizeWithin(value: unknown, limit: number): { bytes: number; over: boolean } {
  let bytes = 0;
  // The objects on the path from the root: a cycle is skipped (JSON.stringify would refuse it),
  // but an object reached twice by two paths is counted twice, as JSON.stringify writes it twice
  // (a query's matches share subtrees: `$..*` of a deep document).
  const ancestors = new Set<object>();
  const EXIT = Symbol("exit");
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    if (bytes > limit) return { bytes, over: true };
    const current = stack.pop();
    if (current === EXIT) {
      ancestors.delete(stack.pop() as object);
      continue;
    }
    switch (typeof current) {
      case "string":
        bytes += Buffer.byteLength(current, "utf8") + 2;
        continue;
      case "number":
      case "bigint":
        bytes += String(current).length;
        continue;
      case "boolean":
        bytes += current ? 4 : 5;
        continue;
      case "object":
        break;
      default:
        bytes += 4; // undefined and functions read as null, or vanish
        continue;
    }
    if (current === null) {
      bytes += 4;
      continue;
    }
    if (ancestors.has(current)) continue;
    if (ArrayBuffer.isView(current)) {
      bytes += current.byteLength * 4; // a typed array serializes as {"0":n,…}
      continue;
    }
    ancestors.add(current);
    stack.push(current, EXIT);
    if (Array.isArray(current)) {
      bytes += 2 + Math.max(0, current.length - 1);
      for (let index = current.length - 1; index >= 0; index -= 1) stack.push(current[index]);
      continue;
    }
    bytes += 2;
    for (const [key, item] of Object.entries(current as Record<string, unknown>)) {
      bytes += Buffer.byteLength(key, "utf8") + 4;
      stack.push(item);
    }
  }
  return { bytes, over: bytes > limit };
}
