-- No index on `events.event_id` (issue #17). Nothing looks an event up by
-- its id (a run's timeline is its chain, a stream resumes after a row id),
-- and the writer makes each id a fresh UUIDv7, so the unique index only
-- cost every appended event an entry: ≈ 0.42 of the ≈ 4.2 pages a resolve
-- wrote in a 20,000-run store (docs/performance.md). The table is rebuilt
-- (SQLite cannot drop a column's UNIQUE); ids, links and rows are kept.
CREATE TABLE events_unindexed (
    id              INTEGER PRIMARY KEY,    -- the row id: the order events were appended
    prev            INTEGER,                -- events.id of the run's previous event (NULL: the first)
    run_id          TEXT NOT NULL,
    sequence        INTEGER NOT NULL,
    event_id        TEXT NOT NULL,          -- a UUIDv7 the writer made
    type            TEXT NOT NULL,
    node_id         TEXT,
    payload         TEXT NOT NULL,          -- JSON
    timestamp       INTEGER NOT NULL        -- unix millis
);
INSERT INTO events_unindexed (id, prev, run_id, sequence, event_id, type, node_id, payload, timestamp)
    SELECT id, prev, run_id, sequence, event_id, type, node_id, payload, timestamp
    FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_unindexed RENAME TO events;
