/**
 * The fair take on pg-boss's job table, in SQL: one statement hands out the oldest takeable jobs of
 * the owners with the fewest jobs active in the whole deployment, one job per owner, and marks
 * them active as pg-boss's own fetch does (state, started_on, heartbeat_on, and retry_count for a
 * job started before). A take repeats it until it has what it asked for or one comes back empty,
 * so owners are served as water fills: those with fewer runs going before those with more, and
 * one owner's flood of old jobs never holds back another's first.
 *
 * A job is takeable when, as pg-boss's `key_strict_fifo` fetch has it, it is due, it heads its
 * thread's line (no waiting job of its thread comes before it: a given-back job, `retry`, first,
 * then the oldest) and no job of its thread is active, given back or failed.
 *
 * Why not pg-boss's fetch: it finds the head of every thread's line among all waiting jobs before it
 * picks one (every fetch reads the whole queue: 90 ms at 20,000 waiting after ANALYZE, 35 s with
 * the statistics a bulk insert leaves), and a fair take made several of them. These statements
 * read from the oldest end of the queue only (`NEAREST`: the owners with nothing going are almost
 * always found among the oldest jobs) or, when every owner there has runs going already, go
 * owner by owner through an index of the waiting jobs by owner (`BY_OWNER`, `WAITING_BY_OWNER_INDEX`)
 * — work that grows with the owners and the jobs taken, not with the depth of the queue. That holds
 * while the planner's statistics know the waiting jobs: with those a burst of jobs leaves, it
 * checks each candidate against every waiting job (seconds at 10,000 waiting), so the queue keeps
 * them fresh (job-statistics.ts).
 */

/** Waiting jobs the nearest take looks at, oldest first, before it goes owner by owner. */
export const NEAREST_WINDOW = 256;

/** The index of waiting jobs by owner and age the owner-by-owner take walks (made on the queue's job table by the queue's start). */
export function waitingByOwnerIndex(schema: string, table: string): string {
  return `CREATE INDEX IF NOT EXISTS troupe_job_waiting_owner ON ${schema}.${table} (name, group_id, created_on)
    WHERE state < 'active' AND NOT blocked AND policy = 'key_strict_fifo'`;
}

/**
 * Takeable: the job heads its thread's line (it is the first of its thread's waiting jobs in
 * pg-boss's order: given back first, then oldest) and nothing of its thread is active, given back
 * or failed. Each check is a subquery with `LIMIT 1`, which the planner cannot turn into a join: a
 * lookup of the candidate's thread per candidate, the head one in the order of pg-boss's index by
 * thread (name, singleton_key, state DESC, created_on, id). As anti-joins, fresh statistics made
 * them a hash of every waiting job per take (a cost that grows with the queue), stale ones a scan
 * of every waiting job per candidate.
 */
function takeable(schema: string, table: string, job: string): string {
  return `NOT EXISTS (
      SELECT 1 FROM (SELECT 1 FROM ${schema}.${table} b
       WHERE b.name = $1 AND b.singleton_key = ${job}.singleton_key AND b.policy = 'key_strict_fifo'
         AND b.state IN ('active', 'retry', 'failed') AND b.id <> ${job}.id LIMIT 1) busy)
    AND ${job}.id = (
      SELECT e.id FROM ${schema}.${table} e
       WHERE e.name = $1 AND e.singleton_key = ${job}.singleton_key AND e.policy = 'key_strict_fifo'
         AND e.state < 'active' AND NOT e.blocked
       ORDER BY e.state DESC, e.created_on, e.id LIMIT 1)`;
}

/** Marks the chosen jobs active as pg-boss's fetch does; returns what a RunJob needs, oldest first. */
function claim(schema: string, table: string): string {
  return `, claimed AS (
    UPDATE ${schema}.${table} j
       SET state = 'active', started_on = ${schema}.job_now(), heartbeat_on = ${schema}.job_now(),
           retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1 ELSE j.retry_count END
      FROM chosen
     WHERE j.name = $1 AND j.id = chosen.id AND j.state < 'active'
    RETURNING j.id, j.retry_count, j.data, j.group_id, j.created_on)
  SELECT id, retry_count, data, group_id FROM claimed ORDER BY created_on, id`;
}

export interface FairTake {
  /** $1 queue, $2 how many, $3 owners to leave out (their cap in this process is reached), $4 the window. */
  nearest: string;
  /** $1 queue, $2 how many, $3 owners to leave out, $4 the room of owners holding jobs here (`{ group: room }`, JSON), $5 the room of the others. */
  byOwner: string;
}

/** The two statements of a fair take on the queue's job table (`pgboss.queue.table_name`). */
export function fairTake(schema: string, table: string): FairTake {
  const active = `active AS MATERIALIZED (
      SELECT group_id, COUNT(*)::int AS n FROM ${schema}.${table}
       WHERE name = $1 AND state = 'active' AND group_id IS NOT NULL GROUP BY group_id)`;
  // The owners with nothing active, found among the oldest waiting jobs: one job each, oldest first.
  const nearest = `WITH ${active},
    oldest AS (
      SELECT j.id, j.group_id, j.singleton_key, j.state, j.created_on, j.start_after FROM ${schema}.${table} j
       WHERE j.name = $1 AND j.state < 'active' AND NOT j.blocked
       ORDER BY j.priority DESC, j.created_on LIMIT $4),
    candidates AS (
      SELECT DISTINCT ON (o.group_id) o.id, o.created_on FROM oldest o
       WHERE o.group_id IS NOT NULL AND o.start_after <= ${schema}.job_now()
         AND NOT (o.group_id = ANY($3::text[]))
         AND NOT EXISTS (SELECT 1 FROM active a WHERE a.group_id = o.group_id)
         AND ${takeable(schema, table, "o")}
       ORDER BY o.group_id, o.created_on, o.id),
    chosen AS (SELECT id FROM candidates ORDER BY created_on, id LIMIT $2)
  ${claim(schema, table)}`;
  // Owner by owner (a skip scan of the index by owner): each one's oldest takeable jobs, at most
  // its share of the slots (and its room under the cap here), each at the level it would bring its
  // owner to; the levels up to the lowest owner's plus one share are filled, lowest first. Jobs made
  // before runs had owners (no group) pass any level: they get what no owner's job takes.
  const byOwner = `WITH RECURSIVE ${active},
    owners AS (
      (SELECT j.group_id FROM ${schema}.${table} j
        WHERE j.name = $1 AND j.state < 'active' AND NOT j.blocked AND j.policy = 'key_strict_fifo' AND j.group_id IS NOT NULL
        ORDER BY j.group_id LIMIT 1)
      UNION ALL
      SELECT (SELECT j.group_id FROM ${schema}.${table} j
               WHERE j.name = $1 AND j.state < 'active' AND NOT j.blocked AND j.policy = 'key_strict_fifo' AND j.group_id > o.group_id
               ORDER BY j.group_id LIMIT 1)
        FROM owners o WHERE o.group_id IS NOT NULL),
    share AS (
      SELECT GREATEST(1, CEIL($2::numeric / GREATEST(1, COUNT(*))))::int AS k FROM owners
       WHERE group_id IS NOT NULL AND NOT (group_id = ANY($3::text[]))),
    candidates AS (
      SELECT COALESCE(a.n, 0) AS active, COALESCE(a.n, 0) + h.rank AS level, h.id, h.created_on
        FROM owners o LEFT JOIN active a ON a.group_id = o.group_id
        CROSS JOIN LATERAL (
          SELECT t.id, t.created_on, ROW_NUMBER() OVER (ORDER BY t.created_on, t.id) AS rank FROM (
            SELECT j.id, j.created_on FROM ${schema}.${table} j
             WHERE j.name = $1 AND j.group_id = o.group_id AND j.state < 'active' AND NOT j.blocked AND j.policy = 'key_strict_fifo'
               AND j.start_after <= ${schema}.job_now() AND ${takeable(schema, table, "j")}
             ORDER BY j.created_on, j.id
             LIMIT LEAST((SELECT k FROM share), COALESCE(($4::jsonb ->> o.group_id)::int, $5))) t) h
       WHERE o.group_id IS NOT NULL AND NOT (o.group_id = ANY($3::text[]))),
    unowned AS (
      SELECT j.id, j.created_on FROM ${schema}.${table} j
       WHERE j.name = $1 AND j.group_id IS NULL AND j.state < 'active' AND NOT j.blocked AND j.policy = 'key_strict_fifo'
         AND j.start_after <= ${schema}.job_now() AND ${takeable(schema, table, "j")}
         AND NOT EXISTS (SELECT 1 FROM candidates)
       ORDER BY j.created_on, j.id LIMIT $2),
    chosen AS (
      (SELECT id FROM candidates
        WHERE level <= (SELECT MIN(active) FROM candidates) + (SELECT k FROM share)
        ORDER BY level, created_on, id LIMIT $2)
      UNION ALL
      (SELECT id FROM unowned))
  ${claim(schema, table)}`;
  return { nearest, byOwner };
}
