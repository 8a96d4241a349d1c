-- The votes on an interrupt move into its row (issue #17). A resolve
-- rewrites the interrupt's row anyway; the votes table's index on
-- (interrupt_id, seq) cost each resolve a page of its own (≈ 0.92 of the
-- ≈ 6 a resolve wrote in a 20,000-run store, docs/performance.md).
--
-- `votes` is a JSON array in the order the votes were cast, one element per
-- vote (or `ask`): [principal, action, eligible_via, decided_at,
-- superseded, resume_value, cast_by] (store::votes). The command that
-- records a vote holds its run's row, and writes the array whole.
ALTER TABLE interrupts ADD COLUMN votes TEXT NOT NULL DEFAULT '[]';
-- (The ordered subquery rather than `ORDER BY` inside the aggregate, which
-- SQLite before 3.44 does not read: scripts/schema-parity.sh applies these
-- files with the system's SQLite.)
UPDATE interrupts SET votes = (
    SELECT json_group_array(json_array(principal, action, eligible_via, decided_at, superseded, json(resume_value), cast_by))
    FROM (SELECT * FROM votes v WHERE v.interrupt_id = interrupts.interrupt_id ORDER BY seq))
WHERE interrupt_id IN (SELECT interrupt_id FROM votes);
DROP TABLE votes;
