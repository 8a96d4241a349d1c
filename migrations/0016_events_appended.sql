-- Events are stored in the order they are appended instead of in
-- (run_id, sequence) order (issue #17). A resolve adds a run's next events
-- long after its first ones; in a table clustered by run, the page that
-- holds the run was full and split on most resolves, and each split is more
-- pages to write and copy back (in a 20,000-run store ≈ 5.5 WAL frames per
-- resolve for the events alone, ≈ 2.9 appended, see docs/performance.md).
-- The unique index on (run_id, sequence) serves every read (a run's
-- timeline, the events after a sequence) as the primary key did, and keeps
-- the same guarantee: one event per sequence number of a run.
CREATE TABLE events_appended (
    run_id          TEXT NOT NULL,
    sequence        INTEGER NOT NULL,
    event_id        TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    node_id         TEXT,
    payload         TEXT NOT NULL,          -- JSON
    timestamp       INTEGER NOT NULL,       -- unix millis
    UNIQUE (run_id, sequence)
);
INSERT INTO events_appended (run_id, sequence, event_id, type, node_id, payload, timestamp)
    SELECT run_id, sequence, event_id, type, node_id, payload, timestamp FROM events
    ORDER BY timestamp, run_id, sequence;
DROP TABLE events;
ALTER TABLE events_appended RENAME TO events;
