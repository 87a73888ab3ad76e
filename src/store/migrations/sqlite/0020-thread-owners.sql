-- Issue 32: a thread's name is its owner's (core/thread-key.ts). An API key's thread `daily` is
-- kept as `alice/daily`; the unkeyed owners' (the CLI's and library's: no owner; the API without
-- keys: `local`) keep their names. Rows written before, with a key's thread under its bare name,
-- move: the runs, the audit trail, forks' origins, and the thread's checkpoints and writes, which
-- go with the owner of the thread's latest run (the one that held it; main refused any other
-- owner's run on it since). Names never hold a '/', so a row is moved once.
-- LangGraph's checkpoint tables, exactly as its SqliteSaver makes them (a no-op where they exist),
-- so the moves below have tables to read on a database that never ran anything.
CREATE TABLE IF NOT EXISTS checkpoints (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  parent_checkpoint_id TEXT,
  type TEXT,
  checkpoint BLOB,
  metadata BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS writes (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  channel TEXT NOT NULL,
  type TEXT,
  value BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
CREATE TEMP TABLE thread_moves (old_id TEXT PRIMARY KEY, new_id TEXT NOT NULL);
INSERT INTO thread_moves
  SELECT thread_id, owner || '/' || thread_id
  FROM (SELECT thread_id, owner, ROW_NUMBER() OVER (PARTITION BY thread_id ORDER BY created_at DESC, rowid DESC) AS latest FROM runs)
  WHERE latest = 1 AND owner IS NOT NULL AND owner <> 'local' AND instr(thread_id, '/') = 0;
UPDATE checkpoints SET thread_id = (SELECT new_id FROM thread_moves WHERE old_id = checkpoints.thread_id)
  WHERE thread_id IN (SELECT old_id FROM thread_moves);
UPDATE writes SET thread_id = (SELECT new_id FROM thread_moves WHERE old_id = writes.thread_id)
  WHERE thread_id IN (SELECT old_id FROM thread_moves);
DROP TABLE thread_moves;
UPDATE audit SET thread_id = (SELECT runs.owner FROM runs WHERE runs.id = audit.run_id) || '/' || thread_id
  WHERE thread_id IS NOT NULL AND instr(thread_id, '/') = 0
    AND run_id IN (SELECT id FROM runs WHERE owner IS NOT NULL AND owner <> 'local');
UPDATE runs SET forked_from = json_set(forked_from, '$.threadId', owner || '/' || json_extract(forked_from, '$.threadId'))
  WHERE forked_from IS NOT NULL AND owner IS NOT NULL AND owner <> 'local' AND instr(json_extract(forked_from, '$.threadId'), '/') = 0;
UPDATE runs SET thread_id = owner || '/' || thread_id
  WHERE owner IS NOT NULL AND owner <> 'local' AND instr(thread_id, '/') = 0;
