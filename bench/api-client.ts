import { type Agent, request } from "node:http";

/** An answer of troupe's API as a bench client reads it: the status, the envelope, and its data. */
export interface Reply {
  status: number;
  body: { code?: string; message?: string; data?: Record<string, unknown> };
  data?: unknown;
}

/** One request to the server on 127.0.0.1 as the key's caller, on a keep-alive agent. */
export function call(agent: Agent, port: number, key: string, method: string, pathName: string, body?: unknown): Promise<Reply> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { authorization: `Bearer ${key}` };
    if (payload) Object.assign(headers, { "content-type": "application/json", "content-length": payload.length });
    const sent = request({ host: "127.0.0.1", port, method, path: pathName, agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        const parsed = text ? (JSON.parse(text) as Reply["body"]) : {};
        resolve({ status: response.statusCode ?? 0, body: parsed, data: parsed.data });
      });
    });
    sent.on("error", reject);
    sent.end(payload);
  });
}
