-- A tenant's directory version (issue #17): every interrupt a run raises
-- reads the people it may notify, the tenant's principals with an email
-- address; the writer keeps them in memory per tenant and reads them again
-- only when this version has moved (`store::directory_cache`). Triggers set
-- it, so no write path (the engine, the CLI, another process, SQL by hand)
-- can change a principal and leave it. A random number, not a counter: a
-- version that a rolled-back transaction produced, and a cache filled in
-- it, must never name a later, different directory.
CREATE TABLE directory_versions (
    tenant          TEXT PRIMARY KEY NOT NULL,
    version         INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER principals_inserted AFTER INSERT ON principals BEGIN
    INSERT INTO directory_versions (tenant, version) VALUES (NEW.tenant, random())
        ON CONFLICT (tenant) DO UPDATE SET version = excluded.version;
END;

CREATE TRIGGER principals_updated
AFTER UPDATE OF id, tenant, name, email, groups, roles, is_override ON principals BEGIN
    INSERT INTO directory_versions (tenant, version) VALUES (OLD.tenant, random())
        ON CONFLICT (tenant) DO UPDATE SET version = excluded.version;
    INSERT INTO directory_versions (tenant, version) VALUES (NEW.tenant, random())
        ON CONFLICT (tenant) DO UPDATE SET version = excluded.version;
END;

CREATE TRIGGER principals_deleted AFTER DELETE ON principals BEGIN
    INSERT INTO directory_versions (tenant, version) VALUES (OLD.tenant, random())
        ON CONFLICT (tenant) DO UPDATE SET version = excluded.version;
END;
