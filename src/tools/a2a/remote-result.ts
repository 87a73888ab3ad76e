import { createHash } from "node:crypto";
import type { Artifact, Message, Part, Task } from "@a2a-js/sdk";

/**
 * What a remote agent's finished task hands back, as the value a subtask's result holds: its
 * answer's text exactly when it answered with one text and nothing else; otherwise the texts, the
 * data and the files (each file's bytes as UTF-8 text when they are valid UTF-8, else base64,
 * with its size and SHA-256), so a file the agent wrote reaches troupe byte for byte.
 */

export interface RemoteFile {
  name: string;
  mediaType: string;
  encoding: "utf8" | "base64";
  content: string;
  bytes: number;
  sha256: string;
}

export interface RemoteResult {
  text: string;
  data: unknown[];
  files: RemoteFile[];
  urls: string[];
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function fileOf(name: string, mediaType: string, bytes: Uint8Array): RemoteFile {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const sha256 = createHash("sha256").update(buffer).digest("hex");
  try {
    return { name, mediaType, encoding: "utf8", content: UTF8.decode(buffer), bytes: buffer.byteLength, sha256 };
  } catch {
    return { name, mediaType, encoding: "base64", content: buffer.toString("base64"), bytes: buffer.byteLength, sha256 };
  }
}

/** The text of a message's text parts. */
export function textOfParts(parts: readonly Part[] | undefined): string {
  return (parts ?? []).flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : [])).join("\n");
}

function collect(parts: Array<{ part: Part; artifact?: Artifact }>): RemoteResult {
  const result: RemoteResult = { text: "", data: [], files: [], urls: [] };
  const texts: string[] = [];
  for (const { part, artifact } of parts) {
    const content = part.content;
    if (!content) continue;
    if (content.$case === "text") texts.push(content.value);
    else if (content.$case === "data") result.data.push(content.value);
    else if (content.$case === "raw") result.files.push(fileOf(part.filename || artifact?.name || "file", part.mediaType || "application/octet-stream", content.value));
    else if (content.$case === "url") result.urls.push(content.value);
  }
  result.text = texts.join("\n\n");
  return result;
}

/** The value of a message the agent answered with at once (no task). */
export function valueOfMessage(message: Message): unknown {
  return simplest(collect((message.parts ?? []).map((part) => ({ part }))));
}

/** The value of a finished task: its artifacts, or its status message when it has none. */
export function valueOfTask(task: Task): unknown {
  const parts = (task.artifacts ?? []).flatMap((artifact) => (artifact.parts ?? []).map((part) => ({ part, artifact })));
  if (parts.length === 0) return simplest(collect((task.status?.message?.parts ?? []).map((part) => ({ part }))));
  return simplest(collect(parts));
}

function simplest(result: RemoteResult): unknown {
  if (result.files.length === 0 && result.data.length === 0 && result.urls.length === 0) return result.text;
  if (result.text === "" && result.files.length === 0 && result.urls.length === 0 && result.data.length === 1) return result.data[0];
  return result;
}
