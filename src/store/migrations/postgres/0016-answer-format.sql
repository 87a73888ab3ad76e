-- Issue 33 (SQLite's 27): how a run's answer is meant to be read (markdown or text), kept with it.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS answer_format TEXT;
