-- No index on `runs (workflow_id, created_at)` (issue #17; SQLite's
-- migration 0026 says why): every query by workflow also names the tenant.
DROP INDEX runs_by_workflow;
