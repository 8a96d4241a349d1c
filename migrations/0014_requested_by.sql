-- The person a run is for, when its creator acted on their behalf
-- (`createRun.requestedBy`). Self-approval is refused to them as well as to
-- the run's owner. interrupts.owner_subject holds this person when set (the
-- one whose request it is), so the inbox's own-requests split stays one column.
ALTER TABLE runs ADD COLUMN requested_by TEXT;
