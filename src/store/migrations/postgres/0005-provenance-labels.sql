-- Issue 23: provenance labels (src/core/provenance.ts) on stashed results and map items, as
-- JSON text; NULL on rows stored before labels, which read as untrusted (unlabelled).
ALTER TABLE stash ADD COLUMN IF NOT EXISTS label TEXT;
ALTER TABLE stash_items ADD COLUMN IF NOT EXISTS label TEXT;
