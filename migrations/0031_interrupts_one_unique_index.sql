-- One index fewer per interrupt (issue #17): `UNIQUE (run_id, key)` said
-- what `interrupts_latest (run_id, node_id, visit)` says, since `key` is
-- `run:node:visit` (`interrupt::reentry_key`), and no statement searches by
-- `key`. Every create inserted into both B-trees (the unique one ≈ 105 MiB
-- at 1,000,000 stored runs). `interrupts_latest` becomes unique and keeps
-- the rule: one interrupt per visit of a run's node.
--
-- SQLite drops a table's UNIQUE constraint only with the table, so this
-- copies every interrupt into a table without it, keeping each row's
-- rowid: a run's node states name the row of the interrupt it raised
-- last by rowid (`store::nodes::InterruptRef`).
CREATE TABLE interrupts_rebuilt (
    interrupt_id    TEXT PRIMARY KEY,
    run_id          TEXT NOT NULL,
    node_id         TEXT NOT NULL,
    key             TEXT NOT NULL,          -- re-entry key: run, node, visit
    visit           INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    status          TEXT NOT NULL,          -- pending|resolved|cancelled
    payload         TEXT NOT NULL,          -- InterruptPayload JSON
    contract        TEXT NOT NULL,          -- {requestSchema, resumeSchema, outcomes, typed}
    request         TEXT,                   -- request payload (validated against requestSchema)
    eligibility     TEXT NOT NULL,          -- JSON rules copied from the node
    workflow_id     TEXT NOT NULL,
    title           TEXT NOT NULL,
    owner_subject   TEXT NOT NULL,          -- subjectId of the run owner
    created_at      INTEGER NOT NULL,
    deadline_at     INTEGER,
    resolved_at     INTEGER,
    resolution      TEXT,                   -- interrupt.resolved payload
    reminded_at     INTEGER,
    inbox_group     TEXT,
    votes           TEXT NOT NULL DEFAULT '[]'
);
INSERT INTO interrupts_rebuilt (rowid, interrupt_id, run_id, node_id, key, visit, kind, status,
        payload, contract, request, eligibility, workflow_id, title, owner_subject, created_at,
        deadline_at, resolved_at, resolution, reminded_at, inbox_group, votes)
    SELECT rowid, interrupt_id, run_id, node_id, key, visit, kind, status,
        payload, contract, request, eligibility, workflow_id, title, owner_subject, created_at,
        deadline_at, resolved_at, resolution, reminded_at, inbox_group, votes
    FROM interrupts ORDER BY rowid;
DROP TABLE interrupts;
ALTER TABLE interrupts_rebuilt RENAME TO interrupts;
CREATE UNIQUE INDEX interrupts_latest ON interrupts (run_id, node_id, visit);
CREATE INDEX interrupts_deadline ON interrupts
    (deadline_at, created_at, run_id, inbox_group, owner_subject)
    WHERE status = 'pending' AND deadline_at IS NOT NULL;
CREATE INDEX interrupts_inbox ON interrupts
    (created_at, status, run_id, inbox_group, owner_subject, kind, workflow_id, deadline_at, interrupt_id, node_id, title)
    WHERE status = 'pending';
