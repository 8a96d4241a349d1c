-- No schema change: from this version a suspended node's state in
-- `runs.nodes` may carry an eighth member, `[rowid, visit]` of the
-- interrupt it raised last (`store::nodes::InterruptRef`), which binaries
-- before it cannot read. Recorded as a migration so that such a binary
-- refuses the database (it does not know this migration) instead of
-- failing on every run that raised an interrupt.
SELECT 1;
