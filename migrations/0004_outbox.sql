-- Messages to deliver (email now; callbacks later), written in the same
-- transaction as the interrupt that causes them, delivered by a worker.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT NOT NULL,          -- email
    reason          TEXT NOT NULL,          -- requested | reminder
    run_id          TEXT NOT NULL,
    node_id         TEXT NOT NULL,
    interrupt_id    TEXT NOT NULL,
    recipient       TEXT NOT NULL,          -- principal id
    address         TEXT NOT NULL,          -- email address
    status          TEXT NOT NULL,          -- pending | sent | failed | dropped
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    message         TEXT,                   -- the message as delivered (subject and body)
    delivered_via   TEXT,                   -- smtp | dev-outbox
    created_at      INTEGER NOT NULL,
    sent_at         INTEGER
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_interrupt ON outbox (interrupt_id);

ALTER TABLE interrupts ADD COLUMN reminded_at INTEGER;
