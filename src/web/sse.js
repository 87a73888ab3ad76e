// Server-Sent Events over fetch (EventSource cannot send the Authorization header). Reconnects
// with Last-Event-ID after a dropped connection, and stops once the task (or eval) has ended.

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

function parseBlock(block) {
  let id;
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") id = Number(value);
    else if (field === "data") data += data ? `\n${value}` : value;
  }
  return data ? { id, event: JSON.parse(data) } : undefined;
}

/**
 * Follows `/api/v1/tasks/:id/events`. `onEvent` gets each event once, in order; `onEnd` is
 * called when the task has ended and every event was delivered.
 */
export function followEvents(taskId, handlers) {
  const isLast = (event) => event.type === "run-end" && TERMINAL.has(event.status);
  return followStream(`/api/v1/tasks/${encodeURIComponent(taskId)}/events`, isLast, handlers);
}

/** Follows `/api/v1/evals/:id/events` until its eval-end. */
export function followEvalEvents(evalId, handlers) {
  return followStream(`/api/v1/evals/${encodeURIComponent(evalId)}/events`, (event) => event.type === "eval-end", handlers);
}

function followStream(path, isLast, { headers, onEvent, onEnd, onError }) {
  let lastId = 0;
  let stopped = false;
  let controller;
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  (async () => {
    while (!stopped) {
      controller = new AbortController();
      let ended = false;
      try {
        const response = await fetch(path, {
          headers: { accept: "text/event-stream", ...headers(), ...(lastId ? { "last-event-id": String(lastId) } : {}) },
          signal: controller.signal,
        });
        if (response.status === 204) {
          onEnd?.();
          return;
        }
        if (!response.ok) {
          onError?.(new Error(`event stream: HTTP ${response.status}`), response.status);
          if (response.status === 401 || response.status === 404) return;
          await sleep(3000);
          continue;
        }
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value.replace(/\r\n?/g, "\n");
          for (let index = buffer.indexOf("\n\n"); index >= 0; index = buffer.indexOf("\n\n")) {
            const parsed = parseBlock(buffer.slice(0, index));
            buffer = buffer.slice(index + 2);
            if (!parsed) continue;
            if (parsed.id !== undefined && parsed.id <= lastId) continue;
            if (parsed.id !== undefined) lastId = parsed.id;
            onEvent(parsed.event);
            if (isLast(parsed.event)) ended = true;
          }
        }
      } catch (error) {
        if (stopped) return;
        onError?.(error);
      }
      if (ended) {
        onEnd?.();
        return;
      }
      if (!stopped) await sleep(1000);
    }
  })();
  return {
    close() {
      stopped = true;
      controller?.abort();
    },
  };
}
