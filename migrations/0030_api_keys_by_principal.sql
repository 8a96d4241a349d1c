-- A principal's API keys found by an index, not a scan of every tenant's
-- keys: whether a service principal holds approvals:respond (each link's
-- use, each page naming who may still vote), a principal's keys when it is
-- removed, a tenant's keys on the dashboard.
CREATE INDEX api_keys_by_principal ON api_keys (principal);
