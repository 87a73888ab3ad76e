-- Issue 33: how a run's answer is meant to be read — markdown (a language model's) or text
-- (written by rules or code: the offline model's, a tool's result, JSON) — kept with the answer,
-- so the console renders each answer as what it is. NULL for runs recorded before.
ALTER TABLE runs ADD COLUMN answer_format TEXT;
