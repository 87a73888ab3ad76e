-- Issue 11: poison tasks. starts: how many times the run was set running (a start or a
-- resume); crashes: how many of those in a row ended with its process dead while it ran.
ALTER TABLE runs ADD COLUMN starts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
