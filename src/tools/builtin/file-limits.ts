/** Size limits of the file tools. */
export const FILE_LIMITS = {
  /** What file_read returns by default, and at most. */
  readDefaultBytes: 1024 * 1024,
  readMaxBytes: 10 * 1024 * 1024,
  /** The largest file file_write or file_append leaves behind. */
  writeMaxBytes: 5 * 1024 * 1024,
  listMaxEntries: 1_000,
  deleteMaxEntries: 10_000,
} as const;
