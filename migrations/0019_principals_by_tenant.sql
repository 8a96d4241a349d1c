-- A tenant's directory is read by tenant (the people a new request may
-- notify, on every create; the dashboard's people page): searched by this
-- index instead of a scan of every tenant's principals (issue #17).
CREATE INDEX principals_by_tenant ON principals (tenant, id);
