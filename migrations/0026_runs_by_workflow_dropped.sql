-- No index on `runs (workflow_id, created_at)` (issue #17). Every query that
-- filters runs by workflow also names the tenant, and `runs_by_tenant`
-- serves it (EXPLAIN QUERY PLAN of the dashboard's run list, its count and
-- its workflow list: `SEARCH runs USING INDEX runs_by_tenant`); so this
-- index was only written, an entry per create.
DROP INDEX runs_by_workflow;
