-- `interrupts_pending (status, created_at)` served no query that a partial
-- index on pending rows does not serve better, and SQLite's planner chose it
-- for the deadline sweep (every 200 ms), which then read every pending row
-- and sorted them: a cost that grew with the inbox. Without it the sweep
-- walks `interrupts_deadline` from the oldest deadline and stops at `now`,
-- and each create and resolve writes one index entry fewer.
DROP INDEX interrupts_pending;
