-- Runs are indexed by tenant and creation time instead of by status
-- (issue #17). `runs_by_status (status, created_at)` moved its entry on every
-- change of a run's status — two index pages written per resolve, about one
-- in seven of the pages a resolve wrote (docs/performance.md) — and served no
-- read well: the dashboard filters by tenant first, so it scanned the whole
-- index or the whole table. `runs_by_tenant` never changes after a run is
-- created (new runs are appended at the end of their tenant's range), and
-- the dashboard's reads (a page of a tenant's runs newest first, its counts
-- per status, its workflows) search it by tenant.
DROP INDEX runs_by_status;
CREATE INDEX runs_by_tenant ON runs (tenant, created_at);
