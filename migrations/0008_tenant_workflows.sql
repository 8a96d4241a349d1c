-- Workflows belong to a tenant, or to the instance (tenant = ''): definitions
-- loaded from `[workflows] dirs` are instance-wide and read-only to tenants;
-- a tenant admin registers, replaces and lists only its own. Rows registered
-- before this migration become instance-wide. workflow_versions stays keyed by
-- content digest (a run keeps the version it started with).
CREATE TABLE workflows_by_tenant (
    tenant          TEXT NOT NULL,          -- '' for instance-wide
    id              TEXT NOT NULL,
    digest          TEXT NOT NULL REFERENCES workflow_versions (digest),
    version         TEXT NOT NULL,
    name            TEXT NOT NULL,
    registered_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
INSERT INTO workflows_by_tenant (tenant, id, digest, version, name, registered_at)
    SELECT '', id, digest, version, name, registered_at FROM workflows;
DROP TABLE workflows;
ALTER TABLE workflows_by_tenant RENAME TO workflows;
