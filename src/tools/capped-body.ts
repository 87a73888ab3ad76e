/** A body that errors with `tooLarge()` once more than `maxBytes` have passed, so a peer cannot fill troupe's memory. */
export function cappedBody(body: ReadableStream<Uint8Array>, maxBytes: number, tooLarge: () => Error): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > maxBytes) controller.error(tooLarge());
        else controller.enqueue(chunk);
      },
    }),
  );
}
