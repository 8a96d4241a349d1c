-- Delegation (issue #16): a person's decisions taken by another person of
-- the tenant for a period (out of office), or one pending interrupt's seat
-- moved to another person by an admin (`interrupt_id` set: a reassignment).
-- A delegate votes in the delegator's seat: votes.principal is the seat
-- (whose place the vote takes, what quorum counts), votes.cast_by the
-- person who cast it when that is someone else.
CREATE TABLE delegations (
    delegation_id   TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    delegator       TEXT NOT NULL,          -- whose seat
    delegate        TEXT NOT NULL,          -- who may take it
    starts_at       INTEGER NOT NULL,       -- unix millis
    ends_at         INTEGER,                -- exclusive; NULL: until revoked
    interrupt_id    TEXT,                   -- a reassignment of this interrupt only
    reason          TEXT,
    created_by      TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    revoked_at      INTEGER,
    revoked_by      TEXT
);
-- A vote's lookup of the caster's live delegations, and a person's list.
CREATE INDEX delegations_delegate ON delegations (tenant, delegate, revoked_at);
CREATE INDEX delegations_delegator ON delegations (tenant, delegator, revoked_at);

ALTER TABLE votes ADD COLUMN cast_by TEXT;
