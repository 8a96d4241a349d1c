-- The inbox reads a tenant's pending interrupts by rule group from counts
-- kept with every write (src/store/changes.rs) instead of grouping every
-- pending row on each view. `inbox_group` is the digest of (tenant, kind,
-- workflow, stored rules). A group's count is the sum of its rows in
-- `inbox_counts`, one per `shard`: on PostgreSQL each connection adds to its
-- own row, so concurrent commands never wait for one counter row (a row may
-- go below zero; the sum does not). Pending rows written before this
-- migration get their group when the engine opens (`store::inbox::backfill`).
ALTER TABLE interrupts ADD COLUMN inbox_group TEXT;

CREATE TABLE inbox_groups (
    group_key   TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    eligibility TEXT NOT NULL
);
CREATE INDEX inbox_groups_tenant ON inbox_groups (tenant);

CREATE TABLE inbox_counts (
    group_key TEXT NOT NULL,
    shard     INTEGER NOT NULL,
    pending   INTEGER NOT NULL,
    PRIMARY KEY (group_key, shard)
);

-- A person's own pending requests (the inbox leaves them out where the rules
-- refuse self-approval).
CREATE INDEX interrupts_mine ON interrupts (owner_subject, inbox_group) WHERE status = 'pending';

-- The page now joins on the group: the covering index carries it.
DROP INDEX interrupts_inbox;
CREATE INDEX interrupts_inbox ON interrupts
    (created_at, status, run_id, inbox_group, owner_subject, kind, workflow_id, eligibility, deadline_at, interrupt_id, node_id, title)
    WHERE status = 'pending';

-- Deadline order (soonest first, none last), as `interrupts_inbox` serves age order.
CREATE INDEX interrupts_inbox_deadline ON interrupts
    (deadline_at IS NULL, deadline_at, created_at, run_id, inbox_group, owner_subject)
    WHERE status = 'pending';
