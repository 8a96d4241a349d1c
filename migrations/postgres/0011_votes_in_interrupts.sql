-- The votes on an interrupt move into its row: see migrations/0023_votes_in_interrupts.sql.
ALTER TABLE interrupts ADD COLUMN votes TEXT COLLATE "C" NOT NULL DEFAULT '[]';
UPDATE interrupts SET votes = v.votes
FROM (SELECT interrupt_id,
             json_agg(json_build_array(principal, action, eligible_via, decided_at, superseded, resume_value::json, cast_by) ORDER BY seq)::text AS votes
      FROM votes GROUP BY interrupt_id) v
WHERE interrupts.interrupt_id = v.interrupt_id;
DROP TABLE votes;
