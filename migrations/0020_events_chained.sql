-- A run's events are found through a chain instead of an index on
-- (run_id, sequence) (issue #17). Runs are created in id order, so that
-- index was filled in order and its pages were nearly full; the events a
-- resolve appends to a run created long before landed in such a page, which
-- then split: ≈ 2 of the ≈ 10 pages a resolve wrote in a 20,000-run store
-- (docs/performance.md). Now each event names the id of its run's previous
-- event (`prev`) and the run names its newest (`runs.last_event`): appending
-- touches only the end of `events` and the run's own row, which the command
-- writes anyway. A run's timeline is read by walking the chain back from
-- `last_event` (store::event_log). One event per sequence number of a run
-- is kept by the writer, which numbers them from `runs.next_sequence`;
-- `event_id` stays unique. PostgreSQL keeps its index (postgres/0001).
ALTER TABLE runs ADD COLUMN last_event INTEGER;   -- events.id of the run's newest event

CREATE TABLE events_chained (
    id              INTEGER PRIMARY KEY,    -- the row id: the order events were appended
    prev            INTEGER,                -- events.id of the run's previous event (NULL: the first)
    run_id          TEXT NOT NULL,
    sequence        INTEGER NOT NULL,
    event_id        TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    node_id         TEXT,
    payload         TEXT NOT NULL,          -- JSON
    timestamp       INTEGER NOT NULL        -- unix millis
);
-- The row ids are kept, so `prev` and `last_event` can be computed from the old table.
INSERT INTO events_chained (id, prev, run_id, sequence, event_id, type, node_id, payload, timestamp)
    SELECT rowid, lag(rowid) OVER (PARTITION BY run_id ORDER BY sequence),
           run_id, sequence, event_id, type, node_id, payload, timestamp
    FROM events ORDER BY rowid;
UPDATE runs SET last_event =
    (SELECT rowid FROM events WHERE events.run_id = runs.run_id ORDER BY sequence DESC LIMIT 1);
DROP TABLE events;
ALTER TABLE events_chained RENAME TO events;
