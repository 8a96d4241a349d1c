-- See migrations/0019_principals_by_tenant.sql.
CREATE INDEX principals_by_tenant ON principals (tenant, id);
