-- See migrations/0021_deadline_index_merged.sql.
DROP INDEX interrupts_inbox_deadline;
DROP INDEX interrupts_deadline;
CREATE INDEX interrupts_deadline ON interrupts
    (deadline_at, created_at, run_id, inbox_group, owner_subject)
    WHERE status = 'pending' AND deadline_at IS NOT NULL;
