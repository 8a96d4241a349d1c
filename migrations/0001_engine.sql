-- Tollgate engine schema (SQLite). The event log is the source of truth;
-- runs, node_states, interrupts and votes are projections written in the same
-- transaction as the events they derive from.

-- Every registered version of a definition, by content digest: a run keeps
-- executing the version it started with when the workflow is replaced.
CREATE TABLE workflow_versions (
    digest          TEXT PRIMARY KEY,       -- sha256 of the definition text
    workflow_id     TEXT NOT NULL,
    definition      TEXT NOT NULL,
    registered_at   INTEGER NOT NULL        -- unix millis
);

CREATE TABLE workflows (
    id              TEXT PRIMARY KEY,
    digest          TEXT NOT NULL REFERENCES workflow_versions (digest),
    version         TEXT NOT NULL,
    name            TEXT NOT NULL,
    registered_at   INTEGER NOT NULL
);

CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    workflow_id     TEXT NOT NULL,
    workflow_digest TEXT NOT NULL,
    status          TEXT NOT NULL,
    owner           TEXT NOT NULL,          -- JSON: {tenant, subject}
    current_node_id TEXT,
    error           TEXT,                   -- JSON error object when failed
    inputs          TEXT NOT NULL,          -- JSON
    configurable    TEXT,                   -- JSON
    tags            TEXT,                   -- JSON array
    metadata        TEXT,                   -- JSON object
    callback_url    TEXT,
    next_sequence   INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    completed_at    INTEGER
);
CREATE INDEX runs_by_status ON runs (status, created_at);
CREATE INDEX runs_by_workflow ON runs (workflow_id, created_at);

CREATE TABLE events (
    run_id          TEXT NOT NULL,
    sequence        INTEGER NOT NULL,
    event_id        TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    node_id         TEXT,
    payload         TEXT NOT NULL,          -- JSON
    timestamp       INTEGER NOT NULL,       -- unix millis
    PRIMARY KEY (run_id, sequence)
) WITHOUT ROWID;

-- Per-run, per-node scheduler state (a projection of node.* events).
CREATE TABLE node_states (
    run_id          TEXT NOT NULL,
    node_id         TEXT NOT NULL,
    status          TEXT NOT NULL,          -- idle|running|waiting|suspended|completed|failed|skipped|cancelled
    visits          INTEGER NOT NULL,
    output          TEXT,                   -- JSON
    pending_in      TEXT NOT NULL,          -- JSON: {edgeId: sourceStatus} delivered, not yet consumed
    due_at          INTEGER,                -- core.delay timer
    waiting         TEXT,                   -- run status while this node is suspended
    PRIMARY KEY (run_id, node_id)
) WITHOUT ROWID;
CREATE INDEX node_states_due ON node_states (due_at) WHERE due_at IS NOT NULL;

CREATE TABLE interrupts (
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
    UNIQUE (run_id, key)
);
CREATE INDEX interrupts_latest ON interrupts (run_id, node_id, visit);
CREATE INDEX interrupts_pending ON interrupts (status, created_at);
CREATE INDEX interrupts_deadline ON interrupts (deadline_at) WHERE status = 'pending' AND deadline_at IS NOT NULL;

-- Audit of every vote (and `ask`), with the eligibility ref that admitted it.
CREATE TABLE votes (
    interrupt_id    TEXT NOT NULL,
    seq             INTEGER NOT NULL,       -- order of arrival within the interrupt
    principal       TEXT NOT NULL,
    action          TEXT NOT NULL,
    resume_value    TEXT NOT NULL,
    eligible_via    TEXT NOT NULL,
    decided_at      INTEGER NOT NULL,
    superseded      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (interrupt_id, seq)
) WITHOUT ROWID;

CREATE TABLE idempotency (
    tenant          TEXT NOT NULL,
    operation       TEXT NOT NULL,
    key             TEXT NOT NULL,
    digest          TEXT NOT NULL,
    outcome         TEXT NOT NULL,          -- JSON of the engine outcome
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (tenant, operation, key)
) WITHOUT ROWID;

-- The local directory: principals, their groups and roles.
CREATE TABLE principals (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    name            TEXT NOT NULL,
    email           TEXT,
    groups          TEXT NOT NULL,          -- JSON array
    roles           TEXT NOT NULL,          -- JSON array
    is_override     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE api_keys (
    key_hash        TEXT PRIMARY KEY,       -- sha256 hex of the key
    principal       TEXT NOT NULL,
    scopes          TEXT NOT NULL,          -- space separated
    label           TEXT,
    created_at      INTEGER NOT NULL,
    revoked_at      INTEGER
);
