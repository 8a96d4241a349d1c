-- The inbox's kept counts: see migrations/0011_inbox_counts.sql.
ALTER TABLE interrupts ADD COLUMN inbox_group TEXT COLLATE "C";

CREATE TABLE inbox_groups (
    group_key   TEXT COLLATE "C" PRIMARY KEY,
    tenant      TEXT COLLATE "C" NOT NULL,
    kind        TEXT COLLATE "C" NOT NULL,
    workflow_id TEXT COLLATE "C" NOT NULL,
    eligibility TEXT COLLATE "C" NOT NULL
);
CREATE INDEX inbox_groups_tenant ON inbox_groups (tenant);

CREATE TABLE inbox_counts (
    group_key TEXT COLLATE "C" NOT NULL,
    shard     BIGINT NOT NULL,
    pending   BIGINT NOT NULL,
    PRIMARY KEY (group_key, shard)
);

CREATE INDEX interrupts_mine ON interrupts (owner_subject, inbox_group) WHERE status = 'pending';

-- Keys only (eligibility and title are unbounded, and btree rows are not).
DROP INDEX interrupts_inbox;
CREATE INDEX interrupts_inbox ON interrupts (created_at, run_id, inbox_group, owner_subject) WHERE status = 'pending';

-- Deadline order: ASC is NULLS LAST here, which is the order the inbox shows.
CREATE INDEX interrupts_inbox_deadline ON interrupts (deadline_at, created_at, run_id, inbox_group, owner_subject) WHERE status = 'pending';
