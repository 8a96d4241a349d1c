-- One index of the pending interrupts that have a deadline serves the timer
-- sweep, the reminders and the inbox's deadline order (issue #17). Before,
-- `interrupts_inbox_deadline` held every pending interrupt, those without a
-- deadline too, so each create and resolve wrote an entry there (≈ 0.9 of
-- the ≈ 8 pages a resolve wrote in a 20,000-run store, docs/performance.md),
-- and an interrupt with a deadline had a second entry in `interrupts_deadline`.
-- The deadline order now reads two ranges: this index for the interrupts
-- with a deadline, then `interrupts_inbox` (age order, which carries
-- `deadline_at`) for those without (store::inbox).
DROP INDEX interrupts_inbox_deadline;
DROP INDEX interrupts_deadline;
CREATE INDEX interrupts_deadline ON interrupts
    (deadline_at, created_at, run_id, inbox_group, owner_subject)
    WHERE status = 'pending' AND deadline_at IS NOT NULL;
