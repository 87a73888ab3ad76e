-- Issue 16: scale-out. worker: the worker process holding a run (Postgres deployments; NULL
-- here); cancel_requested: a cancel asked for while another process held the run.
ALTER TABLE runs ADD COLUMN worker TEXT;
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
