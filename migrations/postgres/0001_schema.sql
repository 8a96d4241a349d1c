-- Tollgate schema (PostgreSQL). It mirrors the SQLite migrations
-- migrations/0001..0010 applied in order: the engine sends the same
-- statements to both back ends, so a schema change needs a migration in both
-- directories (scripts/schema-parity.sh compares them).
--
-- Every integer is BIGINT (the engine decodes i64; booleans are 0/1), JSON is
-- stored as text, and text compares byte by byte (COLLATE "C") as in SQLite:
-- tenant isolation rests on range predicates over ids (`ids::TenantRange`).

CREATE TABLE workflow_versions (
    digest          TEXT COLLATE "C" PRIMARY KEY,
    workflow_id     TEXT COLLATE "C" NOT NULL,
    definition      TEXT COLLATE "C" NOT NULL,
    registered_at   BIGINT NOT NULL
);

CREATE TABLE runs (
    run_id          TEXT COLLATE "C" PRIMARY KEY,
    tenant          TEXT COLLATE "C" NOT NULL,
    workflow_id     TEXT COLLATE "C" NOT NULL,
    workflow_digest TEXT COLLATE "C" NOT NULL,
    status          TEXT COLLATE "C" NOT NULL,
    owner           TEXT COLLATE "C" NOT NULL,
    current_node_id TEXT COLLATE "C",
    error           TEXT COLLATE "C",
    inputs          TEXT COLLATE "C" NOT NULL,
    configurable    TEXT COLLATE "C",
    tags            TEXT COLLATE "C",
    metadata        TEXT COLLATE "C",
    callback_url    TEXT COLLATE "C",
    next_sequence   BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    completed_at    BIGINT
);

CREATE INDEX runs_by_status ON runs (status, created_at);

CREATE INDEX runs_by_workflow ON runs (workflow_id, created_at);

CREATE TABLE events (
    run_id          TEXT COLLATE "C" NOT NULL,
    sequence        BIGINT NOT NULL,
    event_id        TEXT COLLATE "C" NOT NULL UNIQUE,
    type            TEXT COLLATE "C" NOT NULL,
    node_id         TEXT COLLATE "C",
    payload         TEXT COLLATE "C" NOT NULL,
    timestamp       BIGINT NOT NULL,
    PRIMARY KEY (run_id, sequence)
);

CREATE TABLE node_states (
    run_id          TEXT COLLATE "C" NOT NULL,
    node_id         TEXT COLLATE "C" NOT NULL,
    status          TEXT COLLATE "C" NOT NULL,
    visits          BIGINT NOT NULL,
    output          TEXT COLLATE "C",
    pending_in      TEXT COLLATE "C" NOT NULL,
    due_at          BIGINT,
    waiting         TEXT COLLATE "C",
    PRIMARY KEY (run_id, node_id)
);

CREATE INDEX node_states_due ON node_states (due_at) WHERE due_at IS NOT NULL;

CREATE TABLE interrupts (
    interrupt_id    TEXT COLLATE "C" PRIMARY KEY,
    run_id          TEXT COLLATE "C" NOT NULL,
    node_id         TEXT COLLATE "C" NOT NULL,
    key             TEXT COLLATE "C" NOT NULL,
    visit           BIGINT NOT NULL,
    kind            TEXT COLLATE "C" NOT NULL,
    status          TEXT COLLATE "C" NOT NULL,
    payload         TEXT COLLATE "C" NOT NULL,
    contract        TEXT COLLATE "C" NOT NULL,
    request         TEXT COLLATE "C",
    eligibility     TEXT COLLATE "C" NOT NULL,
    workflow_id     TEXT COLLATE "C" NOT NULL,
    title           TEXT COLLATE "C" NOT NULL,
    owner_subject   TEXT COLLATE "C" NOT NULL,
    created_at      BIGINT NOT NULL,
    deadline_at     BIGINT,
    resolved_at     BIGINT,
    resolution      TEXT COLLATE "C",
    reminded_at BIGINT,
    UNIQUE (run_id, key)
);

CREATE INDEX interrupts_latest ON interrupts (run_id, node_id, visit);

CREATE INDEX interrupts_pending ON interrupts (status, created_at);

CREATE INDEX interrupts_deadline ON interrupts (deadline_at) WHERE status = 'pending' AND deadline_at IS NOT NULL;

CREATE TABLE votes (
    interrupt_id    TEXT COLLATE "C" NOT NULL,
    seq             BIGINT NOT NULL,
    principal       TEXT COLLATE "C" NOT NULL,
    action          TEXT COLLATE "C" NOT NULL,
    resume_value    TEXT COLLATE "C" NOT NULL,
    eligible_via    TEXT COLLATE "C" NOT NULL,
    decided_at      BIGINT NOT NULL,
    superseded      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (interrupt_id, seq)
);

CREATE TABLE idempotency (
    tenant          TEXT COLLATE "C" NOT NULL,
    operation       TEXT COLLATE "C" NOT NULL,
    key             TEXT COLLATE "C" NOT NULL,
    digest          TEXT COLLATE "C" NOT NULL,
    outcome         TEXT COLLATE "C" NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (tenant, operation, key)
);

CREATE TABLE principals (
    id              TEXT COLLATE "C" PRIMARY KEY,
    tenant          TEXT COLLATE "C" NOT NULL,
    name            TEXT COLLATE "C" NOT NULL,
    email           TEXT COLLATE "C",
    groups          TEXT COLLATE "C" NOT NULL,
    roles           TEXT COLLATE "C" NOT NULL,
    is_override     BIGINT NOT NULL DEFAULT 0
,
    password_hash TEXT COLLATE "C",
    password_generation BIGINT NOT NULL DEFAULT 0);

CREATE TABLE api_keys (
    key_hash        TEXT COLLATE "C" PRIMARY KEY,
    principal       TEXT COLLATE "C" NOT NULL,
    scopes          TEXT COLLATE "C" NOT NULL,
    label           TEXT COLLATE "C",
    created_at      BIGINT NOT NULL,
    revoked_at      BIGINT
);

CREATE TABLE revoked_tokens (
    jti             TEXT COLLATE "C" PRIMARY KEY,
    revoked_at      BIGINT NOT NULL
);

CREATE TABLE outbox (
    id              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    kind            TEXT COLLATE "C" NOT NULL,
    reason          TEXT COLLATE "C" NOT NULL,
    run_id          TEXT COLLATE "C" NOT NULL,
    node_id         TEXT COLLATE "C" NOT NULL,
    interrupt_id    TEXT COLLATE "C" NOT NULL,
    recipient       TEXT COLLATE "C" NOT NULL,
    address         TEXT COLLATE "C" NOT NULL,
    status          TEXT COLLATE "C" NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT COLLATE "C",
    message         TEXT COLLATE "C",
    delivered_via   TEXT COLLATE "C",
    created_at      BIGINT NOT NULL,
    sent_at         BIGINT
,
    body TEXT COLLATE "C",
    response_status BIGINT,
    lease_until BIGINT);

CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';

CREATE INDEX outbox_interrupt ON outbox (interrupt_id);

-- The inbox page walks pending interrupts by age. SQLite's covering index
-- (migration 0005) holds every listed column; PostgreSQL's btree rows are
-- bounded in size (eligibility and title are unbounded), so it keys only.
CREATE INDEX interrupts_inbox ON interrupts (created_at, run_id) WHERE status = 'pending';

CREATE INDEX outbox_kind ON outbox (kind, id);

CREATE TABLE token_keys (
    kid             TEXT COLLATE "C" PRIMARY KEY,
    secret          TEXT COLLATE "C" NOT NULL,
    source          TEXT COLLATE "C" NOT NULL,
    created_at      BIGINT NOT NULL,
    activated_at    BIGINT,
    retired_at      BIGINT
,
    revoked_at BIGINT);

CREATE TABLE workflows (
    tenant          TEXT COLLATE "C" NOT NULL,
    id              TEXT COLLATE "C" NOT NULL,
    digest          TEXT COLLATE "C" NOT NULL REFERENCES workflow_versions (digest),
    version         TEXT COLLATE "C" NOT NULL,
    name            TEXT COLLATE "C" NOT NULL,
    registered_at   BIGINT NOT NULL,
    PRIMARY KEY (tenant, id)
);
