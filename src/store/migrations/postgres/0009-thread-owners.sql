-- Issue 32 (SQLite's 20): a thread's name is its owner's (core/thread-key.ts). An API key's thread
-- `daily` is kept as `alice/daily`; the unkeyed owners' (no owner; `local`, the API without keys)
-- keep their names. Rows written before move: the runs, the audit trail, forks' origins, and the
-- thread's checkpoints, blobs and writes (when the checkpointer's tables exist: it sets them up
-- after these migrations), which go with the owner of the thread's latest run. A queued run's
-- pg-boss job keeps the singleton key it was sent with until it has run.
CREATE TEMP TABLE thread_moves ON COMMIT DROP AS
  SELECT old_id, owner || '/' || old_id AS new_id FROM (
    SELECT DISTINCT ON (thread_id) thread_id AS old_id, owner FROM runs ORDER BY thread_id, created_at DESC, row_order DESC
  ) latest
  WHERE owner IS NOT NULL AND owner <> 'local' AND strpos(old_id, '/') = 0;
CREATE UNIQUE INDEX ON thread_moves (old_id);
ANALYZE thread_moves;
DO $$
BEGIN
  IF to_regclass('public.checkpoints') IS NOT NULL THEN
    UPDATE public.checkpoints c SET thread_id = m.new_id FROM thread_moves m WHERE c.thread_id = m.old_id;
  END IF;
  IF to_regclass('public.checkpoint_blobs') IS NOT NULL THEN
    UPDATE public.checkpoint_blobs c SET thread_id = m.new_id FROM thread_moves m WHERE c.thread_id = m.old_id;
  END IF;
  IF to_regclass('public.checkpoint_writes') IS NOT NULL THEN
    UPDATE public.checkpoint_writes c SET thread_id = m.new_id FROM thread_moves m WHERE c.thread_id = m.old_id;
  END IF;
END
$$;
UPDATE audit a SET thread_id = r.owner || '/' || a.thread_id FROM runs r
  WHERE r.id = a.run_id AND r.owner IS NOT NULL AND r.owner <> 'local' AND a.thread_id IS NOT NULL AND strpos(a.thread_id, '/') = 0;
UPDATE runs SET forked_from = jsonb_set(forked_from::jsonb, '{threadId}', to_jsonb(owner || '/' || (forked_from::jsonb ->> 'threadId')))::text
  WHERE forked_from IS NOT NULL AND owner IS NOT NULL AND owner <> 'local' AND strpos(forked_from::jsonb ->> 'threadId', '/') = 0;
UPDATE runs SET thread_id = owner || '/' || thread_id
  WHERE owner IS NOT NULL AND owner <> 'local' AND strpos(thread_id, '/') = 0;
