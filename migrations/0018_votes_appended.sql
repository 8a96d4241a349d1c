-- Votes are stored in the order they are cast, as events are since 0016
-- (issue #17). Clustered by (interrupt_id, seq), a vote went into the page of
-- an interrupt created long before, usually full: ≈ 1.7 pages written per
-- resolve in a 20,000-run store (docs/performance.md). Appended, the rows of
-- one commit share a page and only the small unique index entry lands at the
-- interrupt's position. The index serves every read (an interrupt's votes in
-- order, a run's audit) and keeps one vote per (interrupt, seq).
CREATE TABLE votes_appended (
    interrupt_id    TEXT NOT NULL,
    seq             INTEGER NOT NULL,       -- order of arrival within the interrupt
    principal       TEXT NOT NULL,
    action          TEXT NOT NULL,
    resume_value    TEXT NOT NULL,
    eligible_via    TEXT NOT NULL,
    decided_at      INTEGER NOT NULL,
    superseded      INTEGER NOT NULL DEFAULT 0,
    cast_by         TEXT,                   -- see 0015_delegations.sql
    UNIQUE (interrupt_id, seq)
);
INSERT INTO votes_appended (interrupt_id, seq, principal, action, resume_value, eligible_via, decided_at, superseded, cast_by)
    SELECT interrupt_id, seq, principal, action, resume_value, eligible_via, decided_at, superseded, cast_by FROM votes
    ORDER BY decided_at, interrupt_id, seq;
DROP TABLE votes;
ALTER TABLE votes_appended RENAME TO votes;
