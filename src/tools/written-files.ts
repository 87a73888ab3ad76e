import { LRUCache } from "lru-cache";

/** The largest file whose bytes are kept; a larger one is read back from the workspace when asked for. */
export const WRITTEN_FILE_KEEP_BYTES = 4 * 1024 * 1024;
/** The most bytes kept at once, all files together. */
const KEPT_TOTAL_BYTES = 32 * 1024 * 1024;
/** How long bytes are kept after they were written (a run's files are asked for right after it ends). */
const KEPT_MS = 10 * 60_000;

/**
 * The bytes of files runs wrote in this process, by the SHA-256 recorded when the run wrote them,
 * for a while and up to a bound (least recently used out first; lru-cache). Whatever reads a
 * run's files back once the run has ended (A2A's file artifacts) finds them here without a trip
 * to the disk — on a loaded machine each of the half-dozen file-system calls of a contained read
 * waits for a libuv thread — and, being looked up by the recorded hash, finds byte for byte what
 * the run wrote. A miss (another process wrote it, a restart, too large, too old) reads the
 * workspace as before.
 */
export class WrittenFiles {
  readonly #byHash: LRUCache<string, Buffer>;

  constructor(options: { maxTotalBytes?: number; maxAgeMs?: number } = {}) {
    const maxSize = options.maxTotalBytes ?? KEPT_TOTAL_BYTES;
    this.#byHash = new LRUCache<string, Buffer>({
      maxSize,
      maxEntrySize: Math.min(WRITTEN_FILE_KEEP_BYTES, maxSize),
      // An empty file still takes an entry.
      sizeCalculation: (bytes) => Math.max(1, bytes.byteLength),
      ttl: options.maxAgeMs ?? KEPT_MS,
    });
  }

  /** Keeps `bytes`, whose SHA-256 the caller has just computed from them (a larger file than the bound is not kept). */
  remember(sha256: string, bytes: Buffer): void {
    if (bytes.byteLength > WRITTEN_FILE_KEEP_BYTES) return;
    this.#byHash.set(sha256, bytes);
  }

  /** The bytes whose SHA-256 is `sha256`, when kept; shared, never to be changed by the caller. */
  get(sha256: string): Buffer | undefined {
    return this.#byHash.get(sha256);
  }

  /** Bytes kept now. */
  get size(): number {
    return this.#byHash.calculatedSize;
  }
}
