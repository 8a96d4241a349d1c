-- See migrations/0029_directory_versions.sql. Here the version is drawn from
-- a sequence, which a rollback does not give back either.
CREATE TABLE directory_versions (
    tenant          TEXT COLLATE "C" PRIMARY KEY,
    version         BIGINT NOT NULL
);

CREATE SEQUENCE directory_version;

CREATE FUNCTION directory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO directory_versions (tenant, version) VALUES (OLD.tenant, nextval('directory_version'))
            ON CONFLICT (tenant) DO UPDATE SET version = excluded.version;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO directory_versions (tenant, version) VALUES (NEW.tenant, nextval('directory_version'))
            ON CONFLICT (tenant) DO UPDATE SET version = excluded.version;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER principals_changed
AFTER INSERT OR DELETE OR UPDATE OF id, tenant, name, email, groups, roles, is_override ON principals
FOR EACH ROW EXECUTE FUNCTION directory_changed();
