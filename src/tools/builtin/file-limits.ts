/** Size limits of the file tools. */
export const FILE_LIMITS = {
  /** The largest file file_read returns whole (a larger one needs `maxBytes` to read its beginning). */
  readMaxBytes: 16 * 1024 * 1024,
  /** The largest file file_write, file_append or file_copy leaves behind. */
  writeMaxBytes: 16 * 1024 * 1024,
  listMaxEntries: 1_000,
  deleteMaxEntries: 10_000,
} as const;

/** How file content travels as a string: UTF-8 text, or base64 for any bytes. */
export const FILE_ENCODINGS = ["utf8", "base64"] as const;
export type FileEncoding = (typeof FILE_ENCODINGS)[number];
