-- Runs by tenant and creation time instead of by status (see
-- migrations/0017_runs_by_tenant.sql). On PostgreSQL it also lets a status
-- change be a heap-only update: no indexed column of `runs` changes on a
-- resolve any more.
DROP INDEX runs_by_status;
CREATE INDEX runs_by_tenant ON runs (tenant, created_at);
