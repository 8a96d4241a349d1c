-- Delegation (see migrations/0015_delegations.sql).
CREATE TABLE delegations (
    delegation_id   TEXT COLLATE "C" PRIMARY KEY,
    tenant          TEXT COLLATE "C" NOT NULL,
    delegator       TEXT COLLATE "C" NOT NULL,
    delegate        TEXT COLLATE "C" NOT NULL,
    starts_at       BIGINT NOT NULL,
    ends_at         BIGINT,
    interrupt_id    TEXT COLLATE "C",
    reason          TEXT,
    created_by      TEXT COLLATE "C" NOT NULL,
    created_at      BIGINT NOT NULL,
    revoked_at      BIGINT,
    revoked_by      TEXT COLLATE "C"
);
CREATE INDEX delegations_delegate ON delegations (tenant, delegate, revoked_at);
CREATE INDEX delegations_delegator ON delegations (tenant, delegator, revoked_at);

ALTER TABLE votes ADD COLUMN cast_by TEXT COLLATE "C";
